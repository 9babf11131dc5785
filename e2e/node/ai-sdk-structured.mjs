// The Vercel AI SDK's generateObject and streamObject on the
// OpenAI-compatible provider with structured outputs on (a json_schema
// response format), a zod schema for the object. The assertion is on the
// object the SDK returns.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateObject, streamObject } from 'ai';
import { z } from 'zod';
import { apiKey, cfg, model, run } from './common.mjs';
import { checkWeather } from './structured.mjs';

const provider = createOpenAICompatible({ name: 'toolguard', baseURL: cfg.baseURL, apiKey, supportsStructuredOutputs: true });
const options = {
  model: provider(model),
  schema: z.object({ city: z.string(), temperature: z.number() }),
  schemaName: 'weather',
  prompt: 'The weather in Paris, as JSON.',
  maxRetries: 0,
};

await run(async () => {
  if (!cfg.stream) {
    const { object } = await generateObject(options);
    return checkWeather(object);
  }
  let streamError;
  const result = streamObject({ ...options, onError: ({ error }) => { streamError ??= error; } });
  for await (const _ of result.partialObjectStream) { /* drain */ }
  if (streamError !== undefined) throw streamError;
  return checkWeather(await result.object);
}, (err) => APICallError.isInstance(err) || (cfg.stream && typeof err?.message === 'string' && !(err instanceof Error)));
