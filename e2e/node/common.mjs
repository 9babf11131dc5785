// What every client script shares: the scenario it runs (from the
// environment, set by the Go suite), the click tool's declaration, the
// assertions on what the tool received or on the error raised, and the one
// JSON line of result. A script exits non-zero when its assertions fail.

function need(name) {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`${name} is not set (the Go suite sets it)`);
  return v;
}

export const cfg = {
  baseURL: need('E2E_BASE_URL'),
  scenario: need('E2E_SCENARIO'),
  stream: process.env.E2E_STREAM === 'true',
  // "tool": the tool must receive wantArgs; "error": the SDK must raise an
  // error that carries wantError.
  expect: need('E2E_EXPECT'),
  wantArgs: JSON.parse(need('E2E_WANT_ARGS')),
  wantError: need('E2E_WANT_ERROR'),
  // The status of an error answered before any event (a stream's error
  // event has none).
  wantStatus: Number(process.env.E2E_WANT_STATUS ?? 400),
};

export const model = 'gpt-e2e';
export const apiKey = 'sk-e2e';
export const prompt = 'Click myCoolButton.';
export const clickDescription = 'Click an element of the page.';
export const clickParameters = {
  type: 'object',
  properties: { selector: { type: 'string' } },
  required: ['selector'],
};

// describe says what a tool received, with its type where JSON hides it.
export function describe(input) {
  const json = JSON.stringify(input);
  if (input !== null && typeof input === 'object' && !Array.isArray(input)) return `tool got ${json}`;
  return `tool got ${json === undefined ? String(input) : json} (${input === null ? 'null' : typeof input})`;
}

// checkToolInput is the assertion on what the tool function received:
// exactly {selector: "myCoolButton"}, with selector a string.
export function checkToolInput(input) {
  const observed = describe(input);
  let detail = '';
  if (cfg.expect === 'error') {
    detail = "the tool ran; want toolguard's error";
  } else if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    detail = `the tool got a ${typeof input}, want an object`;
  } else if (typeof input.selector !== 'string') {
    detail = `selector is a ${typeof input.selector}, want a string`;
  } else if (JSON.stringify(Object.keys(input)) !== JSON.stringify(Object.keys(cfg.wantArgs)) ||
             input.selector !== cfg.wantArgs.selector) {
    detail = `the tool got ${JSON.stringify(input)}, want ${JSON.stringify(cfg.wantArgs)}`;
  }
  return { ok: detail === '', observed, detail };
}

// errorMessage finds the message of an error, or of an error object that a
// stream delivered as data.
function errorMessage(err) {
  if (err instanceof Error) return err.message;
  if (err && typeof err === 'object' && typeof err.message === 'string') return err.message;
  return JSON.stringify(err);
}

// checkError is the assertion on an error: it must be the SDK's own
// (isSDKError), carry toolguard's message, and have the status wanted:
// 400, which no client retries, when a call cannot be made valid; 502 when
// the upstream's reply cannot be checked (wantStatus).
export function checkError(err, isSDKError) {
  // A stream may deliver the error as data, an object that is no Error.
  const name = err instanceof Error ? err.constructor.name : 'error event';
  const status = err?.status ?? err?.statusCode;
  const message = errorMessage(err);
  const observed = `${name}${status === undefined ? '' : ' ' + status}: ${message}`;
  let detail = '';
  if (cfg.expect !== 'error') {
    detail = `want the tool to run, got ${observed}`;
  } else if (!isSDKError(err)) {
    detail = `the error is not the SDK's own: ${observed}`;
  } else if (!message.includes(cfg.wantError)) {
    detail = `the error does not carry toolguard's message ${JSON.stringify(cfg.wantError)}`;
  } else if (status !== undefined && status !== cfg.wantStatus) {
    detail = `status ${status}, want ${cfg.wantStatus}`;
  }
  return { ok: detail === '', observed, detail, ...(detail && err instanceof Error ? { stack: err.stack } : {}) };
}

// run runs a client, turns what it throws into a checked error, prints the
// result line and sets the exit code.
export async function run(client, isSDKError) {
  let result;
  try {
    result = await client();
  } catch (err) {
    result = checkError(err, isSDKError);
  }
  console.log(JSON.stringify(result));
  process.exitCode = result.ok ? 0 : 1;
}
