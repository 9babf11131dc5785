// The @anthropic-ai/sdk package on the Messages API: a tool loop as the
// SDK's documentation shows it. messages.create (or messages.stream, its
// finalMessage) asks the model; each tool_use block's input goes to the
// click tool, the assistant's content and a tool_result per call are sent
// back with the whole conversation, until the model answers in text.
import Anthropic from '@anthropic-ai/sdk';
import { apiKey, cfg, checkToolInput, clickDescription, clickParameters, prompt, run } from './common.mjs';

await run(async () => {
  // The SDK's base URL is the API's origin: it adds /v1/messages itself.
  const client = new Anthropic({ baseURL: cfg.baseURL.replace(/\/v1$/, ''), apiKey, maxRetries: 0 });
  const messages = [{ role: 'user', content: prompt }];
  const ask = () => {
    const params = {
      model: 'claude-e2e',
      max_tokens: 1024,
      messages,
      tools: [{ name: 'click', description: clickDescription, input_schema: clickParameters }],
    };
    return cfg.stream ? client.messages.stream(params).finalMessage() : client.messages.create(params);
  };
  let result;
  for (let turn = 0; turn < 3; turn++) {
    const message = await ask();
    const calls = message.content.filter((block) => block.type === 'tool_use');
    if (!calls.length) {
      const text = message.content.filter((block) => block.type === 'text').map((block) => block.text).join('');
      if (result?.ok && !text) return { ...result, ok: false, detail: 'the model answered the tool result without text' };
      break;
    }
    if (message.stop_reason !== 'tool_use') {
      return { ok: false, observed: `stop_reason ${message.stop_reason}`, detail: 'tool_use blocks with another stop_reason' };
    }
    const results = [];
    for (const call of calls) {
      if (call.name !== 'click') return { ok: false, observed: `call to ${call.name}`, detail: 'want a call to click' };
      result = checkToolInput(call.input);
      if (!result.ok) return result;
      results.push({ type: 'tool_result', tool_use_id: call.id, content: `clicked ${result.observed}` });
    }
    messages.push({ role: 'assistant', content: message.content }, { role: 'user', content: results });
  }
  return result ?? { ok: false, observed: 'tool not called', detail: 'the model made no tool call' };
}, (err) => err instanceof Anthropic.APIError);
