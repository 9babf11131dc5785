// The openai npm package on the Responses API: a tool loop as the SDK's
// documentation shows it. responses.create (or responses.stream, its final
// response) asks the model; each function_call item's arguments are parsed
// and run through the click tool, its output sent back with the whole
// conversation (stateless: store is false), until the model answers in text.
import OpenAI from 'openai';
import { apiKey, cfg, checkToolInput, clickDescription, clickParameters, model, prompt, run } from './common.mjs';

await run(async () => {
  const client = new OpenAI({ baseURL: cfg.baseURL, apiKey });
  const input = [{ role: 'user', content: prompt }];
  const ask = () => {
    const params = {
      model,
      input,
      store: false,
      tools: [{ type: 'function', name: 'click', description: clickDescription, parameters: clickParameters, strict: false }],
    };
    return cfg.stream ? client.responses.stream(params).finalResponse() : client.responses.create(params);
  };
  let result;
  for (let turn = 0; turn < 3; turn++) {
    const response = await ask();
    // A stream that ends in response.failed resolves with the failed response.
    if (response.error) throw { type: 'response.failed', ...response.error };
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (!calls.length) {
      if (result?.ok && !response.output_text) {
        return { ...result, ok: false, detail: 'the model answered the tool output without text' };
      }
      break;
    }
    for (const call of calls) {
      if (call.name !== 'click') return { ok: false, observed: `call to ${call.name}`, detail: 'want a call to click' };
      result = checkToolInput(JSON.parse(call.arguments));
      if (!result.ok) return result;
      const { id, ...replayed } = call; // ids of unstored items must not be replayed
      input.push(replayed, { type: 'function_call_output', call_id: call.call_id, output: `clicked ${result.observed}` });
    }
  }
  return result ?? { ok: false, observed: 'tool not called', detail: 'the model made no tool call' };
}, (err) => err instanceof OpenAI.APIError ||
  (cfg.stream && ['error', 'response.failed'].includes(err?.type) && !(err instanceof Error)));
