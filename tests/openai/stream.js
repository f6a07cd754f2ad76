// A standard OpenAI client (the npm `openai` package, pinned by
// package-lock.json) streams a chat from serve, configured with nothing
// but the base URL. Prints the text of each chunk as one JSON string per
// line, then the finish reason.
//
//   node stream.js BASE_URL MESSAGE SEED MAX_TOKENS
const OpenAI = require("openai");

async function main() {
  const [base, message, seed, max] = process.argv.slice(2);
  const client = new OpenAI({ baseURL: base, apiKey: "none" });
  const stream = await client.chat.completions.create({
    model: "any",
    messages: [{ role: "user", content: message }],
    stream: true,
    seed: Number(seed),
    max_tokens: Number(max),
  });
  let finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.delta.content) console.log(JSON.stringify(c.delta.content));
    if (c.finish_reason) finish = c.finish_reason;
  }
  console.log("finish: " + finish);
}

main().catch((e) => {
  console.error("stream.js: " + e.message);
  process.exit(1);
});
