#!/usr/bin/env node
// Checks GGUF files with an independent reader, @huggingface/gguf@0.4.6, plus
// the checks that package does not make: every tensor's data range lies in the
// file, sizes agree with the dtype's block size, offsets are aligned, and no
// two tensors overlap. Prints one line per file; exits 1 if any file fails.
//
//   node scripts/check_gguf.mjs FILE...
import { createRequire } from 'node:module';
import { statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'oracle', 'package.json'));
const { gguf } = require('@huggingface/gguf');

// ggml type id -> [name, elements per block, bytes per block], from the GGUF spec.
const BLOCKS = new Map([
  [0, ['F32', 1, 4]], [1, ['F16', 1, 2]], [2, ['Q4_0', 32, 18]], [3, ['Q4_1', 32, 20]],
  [6, ['Q5_0', 32, 22]], [7, ['Q5_1', 32, 24]], [8, ['Q8_0', 32, 34]], [9, ['Q8_1', 32, 36]],
  [10, ['Q2_K', 256, 84]], [11, ['Q3_K', 256, 110]], [12, ['Q4_K', 256, 144]],
  [13, ['Q5_K', 256, 176]], [14, ['Q6_K', 256, 210]], [15, ['Q8_K', 256, 292]],
  [24, ['I8', 1, 1]], [25, ['I16', 1, 2]], [26, ['I32', 1, 4]], [27, ['I64', 1, 8]],
  [28, ['F64', 1, 8]], [30, ['BF16', 1, 2]],
]);

async function check(file) {
  const abs = path.resolve(file);
  const fileSize = BigInt(statSync(abs).size);
  const parsed = await gguf(abs, { allowLocalFile: true, typedMetadata: true });
  const { metadata, tensorInfos, tensorDataOffset } = parsed;
  // The package reads past the end of a truncated header without noticing.
  const headerEnd = BigInt(parsed.tensorInfoByteRange[1]);
  if (headerEnd > fileSize) {
    throw new Error(`header (metadata + tensor infos) ends at ${headerEnd}, past file size ${fileSize}`);
  }
  const numKv = Object.keys(metadata).filter(
    (k) => !['version', 'tensor_count', 'kv_count'].includes(k)).length;
  if (BigInt(numKv) !== BigInt(metadata.kv_count)) {
    throw new Error(`kv_count is ${metadata.kv_count} but ${numKv} distinct keys were read`);
  }
  const alignment = BigInt(metadata['general.alignment'] ?? 32);
  if (tensorDataOffset % alignment !== 0n) {
    throw new Error(`data section offset ${tensorDataOffset} not aligned to ${alignment}`);
  }
  if (tensorInfos.length > 0 && tensorDataOffset > fileSize) {
    throw new Error(`data section starts at ${tensorDataOffset}, past file size ${fileSize}`);
  }
  const ranges = [];
  const names = new Set();
  for (const t of tensorInfos) {
    const where = `tensor '${t.name}'`;
    if (names.has(t.name)) throw new Error(`${where}: duplicate name`);
    names.add(t.name);
    const block = BLOCKS.get(Number(t.dtype));
    if (!block) throw new Error(`${where}: unknown dtype ${t.dtype}`);
    const [typeName, blockElems, blockBytes] = block;
    if (t.shape.length < 1 || t.shape.length > 4) {
      throw new Error(`${where}: n_dims ${t.shape.length} not in [1, 4]`);
    }
    let elements = 1n;
    for (const d of t.shape) {
      if (d <= 0n) throw new Error(`${where}: dim ${d} is not positive`);
      elements *= d;
    }
    const ne0 = t.shape[0];
    if (ne0 % BigInt(blockElems) !== 0n) {
      throw new Error(`${where}: ne[0]=${ne0} is not a multiple of the ${typeName} block ${blockElems}`);
    }
    const size = (elements / BigInt(blockElems)) * BigInt(blockBytes);
    if (t.offset % alignment !== 0n) {
      throw new Error(`${where}: offset ${t.offset} not aligned to ${alignment}`);
    }
    const end = tensorDataOffset + t.offset + size;
    if (end > fileSize) {
      throw new Error(`${where}: data ends at ${end}, past file size ${fileSize}`);
    }
    ranges.push([t.offset, t.offset + size, t.name]);
  }
  ranges.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  for (let i = 1; i < ranges.length; ++i) {
    if (ranges[i - 1][1] > ranges[i][0]) {
      throw new Error(`tensor '${ranges[i][2]}' overlaps tensor '${ranges[i - 1][2]}'`);
    }
  }
  return `v${metadata.version}, ${numKv} metadata keys, ${tensorInfos.length} tensors, ` +
      `data at ${tensorDataOffset}, ${fileSize} bytes`;
}

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node scripts/check_gguf.mjs FILE...');
  process.exit(2);
}
let failures = 0;
for (const file of files) {
  try {
    console.log(`OK   ${file}: ${await check(file)}`);
  } catch (err) {
    ++failures;
    console.log(`FAIL ${file}: ${err && err.message ? err.message : err}`);
  }
}
process.exit(failures === 0 ? 0 : 1);
