// Drives a stored task's A2A agent with the official A2A JavaScript SDK's
// client (@a2a-js/sdk, A2A v1.0, JSON-RPC) and prints what it saw as one
// JSON object, for integration/a2a_test.go:
//
//   node run.mjs BASE_URL KEY STEPS_JSON
//
// BASE_URL is the agent's base URL (/a2a/{name}/); the client reads the
// card there. Each step is {"send": text, "stream"?: bool, "inContext"?:
// bool (the last task's context), "toTask"?: bool (the last task itself),
// "immediately"?: bool, "variables"?: {...}} or {"cancel": true},
// {"subscribe": true} (SubscribeToTask), {"push": url, "token"?: string}
// (a push notification configuration for the last task), {"pushList":
// true}, {"pushGet": true} or {"pushDelete": true} (the last configuration),
// {"await": url} (until the test's URL answers 200) or {"get": true} (the
// last task). The output is {"card": {...}, "steps":
// [{"task": {...}, "events": [...], "error": "..."}]}, in A2A's JSON.
import { AgentCard, Message, SendMessageRequest, StreamResponse, Task } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const [baseUrl, key, stepsJSON] = process.argv.slice(2);
const fetchImpl = (url, init = {}) =>
  fetch(url, { ...init, headers: { ...(init.headers ?? {}), Authorization: `Bearer ${key}` } });
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }),
);
const client = await factory.createFromUrl(baseUrl);
const card = AgentCard.toJSON(await client.getAgentCard());
let last = null; // the last task, as the SDK decoded it
let lastPush = ""; // the last push notification configuration's ID
const steps = [];
let n = 0;
for (const step of JSON.parse(stepsJSON) ?? []) {
  n++;
  const out = { events: [] };
  try {
    if (step.send !== undefined) {
      const message = {
        messageId: `m-${process.pid}-${n}`,
        role: "ROLE_USER",
        parts: [{ text: step.send, mediaType: "text/plain" }],
      };
      if (step.inContext && last) message.contextId = last.contextId;
      if (step.toTask && last) {
        message.contextId = last.contextId;
        message.taskId = last.id;
      }
      if (step.variables) message.metadata = { variables: step.variables };
      const req = SendMessageRequest.fromJSON({
        message,
        configuration: step.immediately ? { returnImmediately: true } : undefined,
      });
      if (step.stream) {
        for await (const ev of client.sendMessageStream(req)) {
          out.events.push(StreamResponse.toJSON(ev));
          if (ev.payload?.$case === "task") last = ev.payload.value;
        }
        if (last) out.task = Task.toJSON(await client.getTask({ tenant: "", id: last.id }));
      } else {
        const res = await client.sendMessage(req);
        if ("status" in res) {
          last = res;
          out.task = Task.toJSON(res);
        } else {
          out.message = Message.toJSON(res);
        }
      }
    } else if (step.cancel) {
      const t = await client.cancelTask({ tenant: "", id: last.id });
      out.task = Task.toJSON(t);
    } else if (step.subscribe) {
      for await (const ev of client.resubscribeTask({ tenant: "", id: last.id })) {
        out.events.push(StreamResponse.toJSON(ev));
      }
      out.task = Task.toJSON(await client.getTask({ tenant: "", id: last.id }));
    } else if (step.push) {
      const cfg = await client.createTaskPushNotificationConfig({ tenant: "", id: "", taskId: last.id, url: step.push, token: step.token ?? "", authentication: undefined });
      lastPush = cfg.id;
      out.config = cfg;
    } else if (step.pushList) {
      out.configs = (await client.listTaskPushNotificationConfig({ tenant: "", taskId: last.id, pageSize: 0, pageToken: "" })).configs;
    } else if (step.pushGet) {
      out.config = await client.getTaskPushNotificationConfig({ tenant: "", taskId: last.id, id: lastPush });
    } else if (step.pushDelete) {
      await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: last.id, id: lastPush });
    } else if (step.await) {
      // Waits until the test's URL answers 200 (e.g. its webhook saw a post).
      const until = Date.now() + 30000;
      while (!(await fetch(step.await)).ok) {
        if (Date.now() > until) throw new Error(`${step.await} did not answer 200 within 30s`);
        await new Promise((r) => setTimeout(r, 200));
      }
    } else if (step.get) {
      const t = await client.getTask({ tenant: "", id: last.id });
      out.task = Task.toJSON(t);
    }
  } catch (e) {
    out.error = String(e?.message ?? e);
  }
  steps.push(out);
}
process.stdout.write(JSON.stringify({ card, steps }));
