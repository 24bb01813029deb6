#!/usr/bin/env python3
# Draws the dyllm-studio icon (a token canvas mid-denoising: coloured cells = unmasked at some step, grey = still
# masked) as dyllm-studio.svg and a 256x256 dyllm-studio.png from the same geometry. Standard library only.
import struct
import zlib
from pathlib import Path

SIZE = 64                      # design grid; the PNG is drawn at SCALE x this
SCALE = 4
RADIUS = 10                    # background corner radius
BG = (0x1E, 0x24, 0x30)
MASKED = (0x5A, 0x62, 0x70)
STEPS = [(0x44, 0x01, 0x54), (0x3B, 0x52, 0x8B), (0x21, 0x91, 0x8C), (0x5E, 0xC9, 0x62), (0xFD, 0xE7, 0x25)]
# step at which each cell of the 4x4 canvas was unmasked (viridis colour); -1 = still masked
GRID = [[0, 1, 3, -1],
        [1, 2, -1, 4],
        [2, -1, 4, -1],
        [-1, 3, -1, -1]]
CELL, GAP, MARGIN = 10, 3, 8   # 8 + 4*10 + 3*3 = 57 -> centred in 64 with the 7-px right/bottom margin


def cells():
    for r, row in enumerate(GRID):
        for c, step in enumerate(row):
            x, y = MARGIN + c * (CELL + GAP), MARGIN + r * (CELL + GAP)
            yield x, y, (MASKED if step < 0 else STEPS[step])


def svg():
    hexc = lambda rgb: "#%02x%02x%02x" % rgb
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE}" height="{SIZE}" viewBox="0 0 {SIZE} {SIZE}">',
           f'  <rect width="{SIZE}" height="{SIZE}" rx="{RADIUS}" fill="{hexc(BG)}"/>']
    out += [f'  <rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" rx="2" fill="{hexc(rgb)}"/>'
            for x, y, rgb in cells()]
    return "\n".join(out + ["</svg>", ""])


def inside_rounded(px, py, x, y, w, h, r):
    cx = min(max(px, x + r), x + w - r)
    cy = min(max(py, y + r), y + h - r)
    return (px - cx) ** 2 + (py - cy) ** 2 <= r * r


def png():
    n = SIZE * SCALE
    rows = []
    boxes = list(cells())
    for j in range(n):
        row = bytearray([0])   # filter type 0
        for i in range(n):
            px, py = (i + 0.5) / SCALE, (j + 0.5) / SCALE
            rgba = (0, 0, 0, 0)
            if inside_rounded(px, py, 0, 0, SIZE, SIZE, RADIUS):
                rgba = BG + (255,)
                for x, y, rgb in boxes:
                    if inside_rounded(px, py, x, y, CELL, CELL, 2):
                        rgba = rgb + (255,)
            row += bytes(rgba)
        rows.append(bytes(row))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", n, n, 8, 6, 0, 0, 0)   # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + \
        chunk(b"IEND", b"")


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    (here / "dyllm-studio.svg").write_text(svg())
    (here / "dyllm-studio.png").write_bytes(png())
