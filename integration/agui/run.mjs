// Drives a thread of AG-UI runs with the official client (@ag-ui/client's
// HttpAgent) and prints what it saw as one JSON object, for
// integration/agui_test.go:
//
//   node run.mjs URL KEY THREAD STEPS_JSON
//
// STEPS_JSON is an array of steps, each {"user": "text"} (a new user
// message, then a run), {"resume": "approve" | "deny"} (a run that
// answers every interrupt the last run ended with), {"toolResult": "text"}
// (a run whose tool messages answer every frontend tool call the last run
// ended at, pendingToolCallIds, each with the text and the call's
// arguments) or {"again": true} (a run with nothing new). A step's
// "tools" (JSON text) are the frontend tools its run offers. The output is
// {"runs": [{"events": [...], "outcome": {...}, "error": "..."}], "messages": [...]}.
import { HttpAgent } from "@ag-ui/client";

const [url, key, threadId, stepsJSON] = process.argv.slice(2);
const steps = JSON.parse(stepsJSON);
const agent = new HttpAgent({ url, threadId, headers: { Authorization: `Bearer ${key}` } });
const runs = [];
let lastInterrupts = [];
let lastPending = [];
let n = 0;
for (const step of steps) {
  n++;
  const params = { runId: `agui-run-${n}` };
  if (step.user !== undefined) {
    agent.addMessage({ id: `user-${n}`, role: "user", content: step.user });
  }
  if (step.tools !== undefined) {
    params.tools = JSON.parse(step.tools);
  }
  if (step.toolResult !== undefined) {
    for (const id of lastPending) {
      const call = agent.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === id);
      agent.addMessage({
        id: `tool-${n}-${id}`,
        role: "tool",
        toolCallId: id,
        content: `${step.toolResult} ${call?.function?.arguments ?? "(call not seen)"}`,
      });
    }
  }
  if (step.resume !== undefined) {
    params.resume = lastInterrupts.map((i) => ({
      interruptId: i.id,
      status: "resolved",
      payload: { approve: step.resume === "approve", reason: `${step.resume} from the AG-UI client` },
    }));
  }
  const events = [];
  let outcome = null;
  let error = null;
  try {
    await agent.runAgent(params, {
      onEvent: ({ event }) => {
        events.push(event);
      },
      onRunFinishedEvent: ({ event }) => {
        outcome = event.outcome ?? { type: "success" };
      },
    });
  } catch (e) {
    error = String(e?.message ?? e);
  }
  lastInterrupts = outcome?.type === "interrupt" ? outcome.interrupts : [];
  lastPending = outcome?.type === "success" ? (outcome.pendingToolCallIds ?? []) : [];
  runs.push({ events, outcome, error });
}
process.stdout.write(JSON.stringify({ runs, messages: agent.messages, state: agent.state }));
