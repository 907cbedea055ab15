// A TypeScript agent's memory in a himga server: validate a conversation with the schemas, store
// it, recall from it, forget it.
//
//   make serve &                                  # a server on 127.0.0.1:50051
//   npm ci && npx tsc -p examples/typescript
//   node build/typescript/examples/typescript/main.js 127.0.0.1:50051
import { connectMemory, errorReason, fieldViolations, ingestItem, Reason } from "./memory.js";
import { SchemaValidator } from "./schemas.js";
import type { Session } from "../../generated/typescript/schema/v1.js";

const target = process.argv[2] ?? process.env.HIMGA_TARGET ?? "127.0.0.1:50051";
const namespace = "example-typescript";

const session: Session = {
  session_id: "s1",
  date_str: "1:56 pm on 8 May, 2023",
  messages: [
    { role: "Caroline", content: "I went to an LGBTQ support group yesterday.", turn_id: "D1:1" },
    {
      role: "Melanie",
      content: "That sounds great! I painted a sunrise last week.",
      turn_id: "D1:2",
    },
  ],
};

const schemas = new SchemaValidator();
const problems = schemas.violations("session", session);
if (problems.length > 0) throw new Error(`invalid session: ${JSON.stringify(problems)}`);
console.log("bad message:", schemas.violations("message", { role: "", text: "hi" }));

// HIMGA_TOKEN for a server with an auth file; HIMGA_TLS_CA (and HIMGA_TLS_CERT, HIMGA_TLS_KEY for
// mutual TLS) for a server that speaks TLS.
const memory = connectMemory(target, {
  token: process.env.HIMGA_TOKEN,
  ca: process.env.HIMGA_TLS_CA,
  cert: process.env.HIMGA_TLS_CERT,
  key: process.env.HIMGA_TLS_KEY,
});
const items = (session.messages ?? []).map((message) => ingestItem(message, session));
const { ingested } = await memory.ingestBatch({ namespace, items });
console.log(`stored ${ingested} messages in ${namespace}`);

const answer = await memory.retrieve({ namespace, query: "When did Melanie paint a sunrise?" });
console.log("context:", JSON.stringify(answer.context));
for (const hit of answer.hits) console.log(`  ${hit.turnId} ${hit.role}: ${hit.content}`);

// A malformed request is refused whole, with the offending field named. A failure is told apart
// by its reason, not by its status code.
await memory
  .ingestBatch({ namespace, items: [ingestItem({ role: "", content: "?" }, session)] })
  .catch((error: unknown) => {
    switch (errorReason(error)) {
      case Reason.InvalidRequest:
        console.log("rejected:", fieldViolations(error));
        break;
      case Reason.MemoryMismatch:
        console.log(`${namespace} holds another memory: name it in the call, or pick another`);
        break;
      default:
        throw error;
    }
  });
await memory.reset({ namespace });
