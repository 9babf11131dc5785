// The Vercel AI SDK on the Responses API: the client of ai-sdk-loop.mjs with
// @ai-sdk/openai's default provider, openai(model), which calls
// POST /v1/responses.
import { createOpenAI } from '@ai-sdk/openai';
import { runAISDK } from './ai-sdk-loop.mjs';
import { apiKey, cfg, model } from './common.mjs';

const openai = createOpenAI({ baseURL: cfg.baseURL, apiKey });
await runAISDK(openai(model));
