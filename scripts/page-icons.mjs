// Writes the approval page's app icons (src/daemon/approval-page/static/icon-192.png,
// icon-512.png): a door in an arch on the page's dark blue, drawn pixel by pixel and
// encoded as PNG with zlib, so no image tool is needed. Run once when the design changes:
//   node scripts/page-icons.mjs
import { Buffer } from 'node:buffer';
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const CRC = new Int32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c;
});
function crc32(buf) {
  let c = -1;
  for (const b of buf) c = CRC[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
function pixel(x, y, n) {
  const u = (x + 0.5) / n;
  const v = (y + 0.5) / n;
  const bg = [0x1d, 0x3b, 0x5a];
  const door = [0xf4, 0xf1, 0xe8];
  // The arch: a rectangle under a half circle, centred.
  const cx = 0.5, w = 0.22, top = 0.42, bottom = 0.8;
  const inRect = Math.abs(u - cx) <= w && v >= top && v <= bottom;
  const inArch = (u - cx) ** 2 + (v - top) ** 2 <= w * w && v < top;
  const knob = (u - (cx + w * 0.55)) ** 2 + (v - 0.62) ** 2 <= (0.025) ** 2;
  if (knob) return bg;
  return inRect || inArch ? door : bg;
}
function png(n) {
  const raw = Buffer.alloc(n * (n * 3 + 1));
  for (let y = 0; y < n; y++) {
    raw[y * (n * 3 + 1)] = 0;
    for (let x = 0; x < n; x++) {
      const [r, g, b] = pixel(x, y, n);
      const o = y * (n * 3 + 1) + 1 + x * 3;
      raw[o] = r; raw[o + 1] = g; raw[o + 2] = b;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(n, 0);
  ihdr.writeUInt32BE(n, 4);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}
for (const n of [192, 512]) writeFileSync(new URL(`../src/daemon/approval-page/static/icon-${n}.png`, import.meta.url), png(n));
