#!/bin/bash
# A worker's storage on a host the user owns (--cloud ssh), run by bootstrap.sh in place of
# mounting a volume: the slot's storage folder (infra/worker/slots.py) is filled from the
# host's image cache (OA_VM_IMAGE_CACHE: the prepared Windows disk and the worker image, built
# once per host by the first pool's create and kept by every cleanup unless --purge). The copy is sparse and shares blocks
# where the filesystem can (reflink), so N workers of a host cost little more disk than one
# until their guests write. A storage folder that holds a prepared disk already (a repair, a
# host restarted) is kept as it is. Shipped only to own hosts (AWS's user data has no room).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=infra/worker/lib.sh
. "$here/lib.sh"
load_env

cache="$OA_VM_ROOT${OA_VM_IMAGE_CACHE:?}"
step storage "filling ${OA_VM_STORAGE#"$OA_VM_ROOT"} from the host's image cache"
if [ ! -f "$cache/$OA_VM_READY_MARKER" ]; then
  fail "this host's image cache ($OA_VM_IMAGE_CACHE) holds no prepared Windows disk (removed since the create?); clean the pool up and create it again, which builds one (docs/providers.md, Your own hosts)"
fi
mkdir -p "$OA_VM_STORAGE"
if [ ! -f "$OA_VM_STORAGE/$OA_VM_READY_MARKER" ]; then
  cp -a --reflink=auto --sparse=always "$cache/." "$OA_VM_STORAGE/" ||
    fail "could not copy the image cache into ${OA_VM_STORAGE#"$OA_VM_ROOT"} (free disk?)"
fi
