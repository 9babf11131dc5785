// The Vercel AI SDK client that ai-sdk.mjs and ai-sdk-responses.mjs run on
// their provider's model: generateText or streamText with a click tool whose
// inputSchema is a zod schema; the SDK validates the model's input and runs
// the tool's execute, which checks what it received. Tool errors the SDK
// reports instead of running the tool are what the client sees.
import { APICallError, generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { cfg, checkToolInput, clickDescription, prompt, run } from './common.mjs';

// toolErrors describes the tool-error parts of a run: the SDK's verdict on a
// call it would not execute.
function toolErrors(parts) {
  return parts.filter((p) => p.type === 'tool-error').map((p) => `tool-error: ${p.error?.message ?? p.error}`);
}

// runAISDK runs the client on model, an AI SDK language model.
export async function runAISDK(model) {
  await run(async () => {
    let result;
    const options = {
      model,
      prompt,
      tools: {
        click: tool({
          description: clickDescription,
          inputSchema: z.object({ selector: z.string() }),
          execute: async (input) => {
            result = checkToolInput(input);
            return `clicked ${input.selector}`;
          },
        }),
      },
      stopWhen: stepCountIs(2),
      maxRetries: 2,
    };
    let parts;
    if (cfg.stream) {
      let streamError;
      const stream = streamText({ ...options, onError: ({ error }) => { streamError ??= error; } });
      parts = [];
      for await (const part of stream.fullStream) parts.push(part);
      if (streamError !== undefined) throw streamError;
    } else {
      const out = await generateText(options);
      parts = out.steps.flatMap((s) => s.content);
    }
    const errors = toolErrors(parts);
    if (result === undefined && errors.length) {
      return { ok: false, observed: `tool not called; ${errors[0]}`, detail: 'the SDK rejected the call' };
    }
    return result ?? { ok: false, observed: 'tool not called', detail: 'the model made no tool call' };
  }, (err) => APICallError.isInstance(err) || (cfg.stream && typeof err?.message === 'string' && !(err instanceof Error)));
}
