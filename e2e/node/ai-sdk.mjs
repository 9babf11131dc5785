// The Vercel AI SDK on chat completions: the client of ai-sdk-loop.mjs with
// an OpenAI-compatible provider.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { runAISDK } from './ai-sdk-loop.mjs';
import { apiKey, cfg, model } from './common.mjs';

const provider = createOpenAICompatible({ name: 'toolguard', baseURL: cfg.baseURL, apiKey });
await runAISDK(provider(model));
