"""A ``docker`` stand-in holding images as folders: ``create``, ``cp`` (out of a container, to
standard output), ``rm`` and ``info``, with Docker's own semantics for those.

An image is a folder laid out as the image's filesystem (``<root>/client/...``), registered by
its reference (``name@sha256:...``) in ``images.tsv`` beside the script. ``docker create REF
[CMD...]`` prints a new container's 64-hex ID (the command is never run: the container is not
started), or fails with exit code 125 for an image it does not hold; ``docker cp ID:PATH -``
writes a tar archive of PATH (its last component at the top, as Docker does) to standard output,
or fails with exit code 1 naming the missing container or file; ``docker rm [-f] ID`` forgets the
container and prints its ID. Every call is appended to ``calls.log`` beside it. Anything else
fails as an unknown command. Used where a test runs the shipped remote commands for real under
bash (over the test SSH server) against a host whose Docker holds a WAA image.
"""

from __future__ import annotations

from pathlib import Path

_SCRIPT = r"""#!/bin/bash
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
state="$here/.docker"
mkdir -p "$state/containers"
printf '%s\n' "docker $*" >> "$state/calls.log"
image_root() {  # image_root REF: the folder of the image REF names (nothing: not held)
  local ref root
  while IFS=$'\t' read -r ref root; do
    [ "$ref" = "$1" ] && { echo "$root"; return 0; }
  done < "$state/images.tsv"
  return 1
}
case "${1:-}" in
  info) echo "Server Version: stand-in" ;;
  create)
    root="$(image_root "${2:-}")" || {
      echo "Unable to find image '${2:-}' locally" >&2
      echo "docker: Error response from daemon: pull access denied for ${2:-}" >&2
      exit 125
    }
    id="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    printf '%s\n' "$root" > "$state/containers/$id"
    echo "$id" ;;
  cp)
    src="${2:-}"; id="${src%%:*}"; path="${src#*:}"
    [ "${3:-}" = - ] || { echo "stand-in: only 'docker cp ID:PATH -' is implemented" >&2; exit 2; }
    [ -f "$state/containers/$id" ] || {
      echo "Error response from daemon: No such container: $id" >&2; exit 1; }
    root="$(cat "$state/containers/$id")"
    [ -e "$root$path" ] || {
      echo "Error response from daemon: Could not find the file $path in container $id" >&2
      exit 1
    }
    tar -C "$(dirname "$root$path")" -cf - "$(basename "$path")" ;;
  rm)
    shift; [ "${1:-}" = -f ] && shift
    for id in "$@"; do
      if [ -f "$state/containers/$id" ]; then rm -f "$state/containers/$id"; echo "$id"
      else echo "Error response from daemon: No such container: $id" >&2; exit 1; fi
    done ;;
  *) echo "docker: '${1:-}' is not a docker command (stand-in)" >&2; exit 1 ;;
esac
"""


def write_docker(bin_dir: Path, images: dict[str, Path]) -> Path:
    """Write the stand-in as ``bin_dir/docker`` holding ``images`` (reference -> the folder
    laid out as its filesystem); returns the stand-in's state folder (``calls.log``,
    ``containers/``)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "docker"
    script.write_text(_SCRIPT, encoding="utf-8")
    script.chmod(0o755)
    state = bin_dir / ".docker"
    (state / "containers").mkdir(parents=True, exist_ok=True)
    (state / "images.tsv").write_text(
        "".join(f"{ref}\t{root}\n" for ref, root in images.items()), encoding="utf-8")
    return state


def docker_calls(state: Path) -> list[str]:
    """The stand-in's calls so far, one ``docker args`` string each."""
    log = state / "calls.log"
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def containers_left(state: Path) -> list[str]:
    """The IDs of containers created and not removed."""
    return sorted(p.name for p in (state / "containers").iterdir())
