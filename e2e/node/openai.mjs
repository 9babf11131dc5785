// The openai npm package: one chat completion (or its stream, accumulated by
// the SDK's own stream helper), then the click tool run with the arguments
// the model sent, parsed as the SDK's documentation shows.
import OpenAI from 'openai';
import { apiKey, cfg, checkToolInput, clickDescription, clickParameters, model, prompt, run } from './common.mjs';

function click(input) {
  return checkToolInput(input);
}

await run(async () => {
  const client = new OpenAI({ baseURL: cfg.baseURL, apiKey });
  const params = {
    model,
    messages: [{ role: 'user', content: prompt }],
    tools: [{ type: 'function', function: { name: 'click', description: clickDescription, parameters: clickParameters } }],
  };
  const completion = cfg.stream
    ? await client.chat.completions.stream(params).finalChatCompletion()
    : await client.chat.completions.create(params);
  const calls = completion.choices[0]?.message?.tool_calls ?? [];
  if (calls.length !== 1 || calls[0].function.name !== 'click') {
    return { ok: false, observed: `${calls.length} tool calls`, detail: 'want one call to click' };
  }
  return click(JSON.parse(calls[0].function.arguments));
}, (err) => err instanceof OpenAI.APIError);
