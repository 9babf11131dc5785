// The openai npm package's structured-output helpers against replies whose
// output text comes in shapes a client reads in more than one place:
// chat.completions.parse and chat.completions.stream().finalChatCompletion()
// for scenarios named chat-*, responses.parse and
// responses.stream().finalResponse() for responses-*. A stream's listeners
// show the text as its deltas build it: that text is checked as well as the
// parsed object. Either both are exactly {city: "Paris", temperature: 21},
// or the SDK raised toolguard's error.
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { apiKey, cfg, model, run } from './common.mjs';
import { checkWeather } from './structured.mjs';

const Weather = z.object({ city: z.string(), temperature: z.number() });
const prompt = 'The weather in Paris, as JSON.';

// checkShown is checkWeather on the text a stream's listeners were shown.
function checkShown(shown, result) {
  if (!result.ok) return result;
  let obj;
  try {
    obj = JSON.parse(shown);
  } catch {
    return { ok: false, observed: `${result.observed}; deltas showed ${JSON.stringify(shown)}`, detail: 'the deltas do not parse' };
  }
  const r = checkWeather(obj);
  return r.ok ? result : { ...r, observed: `${result.observed}; deltas showed ${shown}` };
}

await run(async () => {
  const client = new OpenAI({ baseURL: cfg.baseURL, apiKey, maxRetries: 0 });
  if (cfg.scenario.startsWith('responses-')) {
    const params = { model, input: prompt, store: false, text: { format: zodTextFormat(Weather, 'weather') } };
    if (!cfg.stream) return checkWeather((await client.responses.parse(params)).output_parsed);
    let shown = '';
    const stream = client.responses.stream(params);
    stream.on('response.output_text.delta', (e) => { shown += e.delta; });
    const final = await stream.finalResponse();
    if (final.error) throw { type: 'response.failed', ...final.error };
    return checkShown(shown, checkWeather(final.output_parsed));
  }
  const params = { model, messages: [{ role: 'user', content: prompt }], response_format: zodResponseFormat(Weather, 'weather') };
  if (!cfg.stream) return checkWeather((await client.chat.completions.parse(params)).choices[0]?.message?.parsed);
  let shown = '';
  const stream = client.chat.completions.stream(params);
  stream.on('content', (_delta, snapshot) => { shown = snapshot; });
  const final = await stream.finalChatCompletion();
  return checkShown(shown, checkWeather(final.choices[0]?.message?.parsed));
}, (err) => err instanceof OpenAI.APIError ||
  // A Responses stream's error event reaches the caller as its data.
  (cfg.stream && ['error', 'response.failed'].includes(err?.type) && !(err instanceof Error)));
