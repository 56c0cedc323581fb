"""Reading text off a screenshot of the simulated desktop, as pixels, not from its layout.

The screen draws every text in one font (:func:`infra.local.render.screen_font`). A text is on
the screenshot inside a box when the pixels of that text, drawn in that font with the box's ink
on the box's background, appear there exactly (at any offset): the picture, not the
accessibility tree, holds it.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

from infra.local.render import screen_font

Rect = tuple[int, int, int, int]


def shows_text(png: bytes, text: str, rect: Rect) -> bool:
    """Whether the screenshot ``png`` shows ``text`` inside ``rect`` (left, top, right,
    bottom); the box's background is its top-left pixel, its ink its darkest one."""
    with Image.open(io.BytesIO(png)) as image:
        box = image.convert("RGB").crop(rect)
    pixels = np.asarray(box, dtype=np.int16)
    background = tuple(int(v) for v in pixels[0, 0])
    ink = tuple(int(v) for v in pixels.reshape(-1, 3)[pixels.sum(axis=2).argmin()])
    font = screen_font()
    left, top, right, bottom = (int(v) for v in font.getbbox(text))
    sample = Image.new("RGB", (right + 4, bottom + 4), background)
    ImageDraw.Draw(sample).text((2, 2), text, fill=ink, font=font)
    glyphs = np.asarray(sample, dtype=np.int16)[2 + top:2 + bottom, 2 + left:2 + right]
    height, width = glyphs.shape[:2]
    for y in range(pixels.shape[0] - height + 1):
        for x in range(pixels.shape[1] - width + 1):
            if np.array_equal(pixels[y:y + height, x:x + width], glyphs):
                return True
    return False
