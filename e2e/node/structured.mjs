// What the structured-output clients share: the assertion on the object
// they parsed.
import { cfg } from './common.mjs';

export const wantWeather = { city: 'Paris', temperature: 21 };

// checkWeather is the assertion on the parsed object: exactly wantWeather.
export function checkWeather(obj) {
  const observed = `parsed ${JSON.stringify(obj)}`;
  let detail = '';
  if (cfg.expect === 'error') {
    detail = "the client parsed an object; want toolguard's error";
  } else if (JSON.stringify(obj) !== JSON.stringify(wantWeather)) {
    detail = `want ${JSON.stringify(wantWeather)}`;
  }
  return { ok: detail === '', observed, detail };
}
