// A TypeScript agent's memory in a himga server: validate a conversation with the schemas, store
// it, recall from it (all of it, then one session only), forget a session, forget it all.
//
//   make serve &                                  # a server on 127.0.0.1:50051
//   npm ci && npx tsc -p examples/typescript
//   node build/typescript/examples/typescript/main.js 127.0.0.1:50051
import {
  connectMemory,
  errorReason,
  fieldViolations,
  ingestItem,
  optionsFromEnv,
  Reason,
} from "./memory.js";
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

// A later session, with its own time: "sunrise" again, said by someone else.
const later: Session = {
  session_id: "s2",
  timestamp: "2023-06-02T09:00:00Z",
  messages: [
    { role: "Caroline", content: "Your sunrise painting is on my wall now.", turn_id: "D2:1" },
  ],
};

const schemas = new SchemaValidator();
for (const each of [session, later]) {
  const problems = schemas.violations("session", each);
  if (problems.length > 0) throw new Error(`invalid session: ${JSON.stringify(problems)}`);
}
console.log("bad message:", schemas.violations("message", { role: "", text: "hi" }));

// HIMGA_TOKEN for a server with an auth file; HIMGA_TLS_CA (and HIMGA_TLS_CERT, HIMGA_TLS_KEY for
// mutual TLS) for a server that speaks TLS.
const memory = connectMemory(target, optionsFromEnv());
const items = [session, later].flatMap((each) =>
  (each.messages ?? []).map((message) => ingestItem(message, each)),
);
const { ingested, ids } = await memory.ingestBatch({ namespace, items });
console.log(`stored ${ingested} messages in ${namespace}: ${ids.join(", ")}`);

const query = "When did Melanie paint a sunrise?";
const answer = await memory.retrieve({ namespace, query });
console.log("context:", JSON.stringify(answer.context));
for (const hit of answer.hits) console.log(`  ${hit.turnId} ${hit.role}: ${hit.content}`);

// Only the later session: a filter is applied, never ignored (a memory that cannot filter
// refuses with the reason UNSUPPORTED).
const inLater = { sessionIds: ["s2"] };
const filtered = await memory.retrieve({ namespace, query, filter: inLater });
for (const hit of filtered.hits) console.log(`  in s2: ${hit.turnId} ${hit.role}: ${hit.content}`);

// Forget the later session: only its messages go.
const { deleted } = await memory.delete({ namespace, filter: inLater });
const left = await memory.retrieve({ namespace, query, filter: inLater });
console.log(`deleted ${deleted} message of s2; ${left.hits.length} hits left there`);

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
