// The openai npm package's structured-output helpers: chat.completions.parse
// with a zod response format (and chat.completions.stream, whose final
// completion is parsed the same way, streamed). The assertion is on the
// parsed object: exactly {city: "Paris", temperature: 21}.
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { apiKey, cfg, model, run } from './common.mjs';
import { checkWeather } from './structured.mjs';

const Weather = z.object({ city: z.string(), temperature: z.number() });

await run(async () => {
  const client = new OpenAI({ baseURL: cfg.baseURL, apiKey, maxRetries: 0 });
  const params = {
    model,
    messages: [{ role: 'user', content: 'The weather in Paris, as JSON.' }],
    response_format: zodResponseFormat(Weather, 'weather'),
  };
  const completion = cfg.stream
    ? await client.chat.completions.stream(params).finalChatCompletion()
    : await client.chat.completions.parse(params);
  return checkWeather(completion.choices[0]?.message?.parsed);
}, (err) => err instanceof OpenAI.APIError);
