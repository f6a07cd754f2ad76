// The npm `openai` client's model calls against serve: list the models,
// retrieve the first by its id, then one that is not there. Prints the
// listed id, the retrieved id and object, and the status of the failure.
//
//   node models.js BASE_URL
const OpenAI = require("openai");

async function main() {
  const [base] = process.argv.slice(2);
  const client = new OpenAI({ baseURL: base, apiKey: "none" });
  const list = await client.models.list();
  const id = list.data[0].id;
  console.log("listed: " + id);
  const m = await client.models.retrieve(id);
  console.log("retrieved: " + m.id + " " + m.object);
  try {
    await client.models.retrieve("no-such-model");
    console.log("missing: found");
  } catch (e) {
    console.log("missing: " + e.status);
  }
}

main().catch((e) => {
  console.error("models.js: " + e.message);
  process.exit(1);
});
