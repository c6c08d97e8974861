// A remote agent built on the official A2A JavaScript SDK's server (A2A
// v1.0, JSON-RPC on express), which integration/a2a_capability_test.go
// gives a task as its a2a capability "shipping". A new task works for
// ASK_AFTER_MS, then asks which warehouse ships (TASK_STATE_INPUT_REQUIRED);
// the reply starts WORK_MS of work, then the task completes with an
// artifact naming the warehouse. CancelTask stops it within 200 ms.
// Requests other than the card's need "Authorization: Bearer $AGENT_TOKEN".
//
// It prints one JSON line per thing it saw (listening, message, cancel,
// canceled, completed, refused), for the test to read.
import express from 'express';
import { AGENT_CARD_PATH, A2A_PROTOCOL_VERSION, TaskState, Role } from '@a2a-js/sdk';
import { InMemoryTaskStore, DefaultRequestHandler, AgentEvent } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const askAfter = Number(process.env.ASK_AFTER_MS ?? 20000);
const workFor = Number(process.env.WORK_MS ?? 150000);
const token = process.env.AGENT_TOKEN ?? '';

const log = (e) => process.stdout.write(JSON.stringify(e) + '\n');
const textPart = (s) => ({ content: { $case: 'text', value: s }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const agentMessage = (taskId, contextId, s) => ({
  role: Role.ROLE_AGENT, messageId: crypto.randomUUID(), parts: [textPart(s)],
  taskId, contextId, extensions: [], metadata: {}, referenceTaskIds: [],
});
const statusEvent = (taskId, contextId, state, message) => AgentEvent.statusUpdate({
  taskId, contextId, status: { state, timestamp: new Date().toISOString(), message }, metadata: {},
});

class ShippingAgent {
  canceled = new Set();

  cancelTask = async (taskId) => {
    log({ event: 'cancel', taskId });
    this.canceled.add(taskId);
  };

  async execute(ctx, bus) {
    const { taskId, contextId, userMessage, task } = ctx;
    const said = userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    log({ event: 'message', taskId, contextId, text: said, continuing: Boolean(task), messageId: userMessage.messageId });
    if (!task) {
      bus.publish(AgentEvent.task({
        id: taskId, contextId, artifacts: [], history: [userMessage], metadata: {},
        status: { state: TaskState.TASK_STATE_SUBMITTED, timestamp: new Date().toISOString(), message: undefined },
      }));
    }
    bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, undefined));
    const asking = !task;
    if (!(await this.work(taskId, asking ? askAfter : workFor))) {
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_CANCELED, agentMessage(taskId, contextId, 'canceled on request')));
      log({ event: 'canceled', taskId });
      return;
    }
    if (asking) {
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED,
        agentMessage(taskId, contextId, `Which warehouse should ship "${said}"?`)));
      return;
    }
    bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: crypto.randomUUID(), name: 'shipment', description: '', parts: [textPart(`shipped from ${said}`)], metadata: undefined, extensions: [] },
    }));
    bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED, undefined));
    log({ event: 'completed', taskId });
  }

  // work waits ms unless the task is canceled meanwhile (false).
  async work(taskId, ms) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (this.canceled.has(taskId)) return false;
      await new Promise((r) => setTimeout(r, 200));
    }
    return !this.canceled.has(taskId);
  }
}

const app = express();
app.use((req, res, next) => {
  if (req.path.startsWith('/.well-known/') || req.headers.authorization === `Bearer ${token}`) return next();
  log({ event: 'refused', path: req.path });
  res.status(401).json({ error: 'a bearer token is required' });
});
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const card = {
    name: 'shipping', description: 'Ships orders; asks which warehouse first.', version: '1.0.0',
    supportedInterfaces: [{ url: `http://127.0.0.1:${port}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {}, securityRequirements: [], defaultInputModes: ['text'], defaultOutputModes: ['text'],
    skills: [{ id: 'ship', name: 'Ship', description: 'Ships an order.', tags: ['shipping'], examples: [], inputModes: ['text'], outputModes: ['text'], securityRequirements: [] }],
    documentationUrl: '', signatures: [],
  };
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new ShippingAgent());
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  log({ event: 'listening', port });
});
