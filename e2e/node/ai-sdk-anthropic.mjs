// The Vercel AI SDK on the Messages API: the client of ai-sdk-loop.mjs with
// @ai-sdk/anthropic's provider, anthropic(model), which calls
// POST /v1/messages.
import { createAnthropic } from '@ai-sdk/anthropic';
import { runAISDK } from './ai-sdk-loop.mjs';
import { apiKey, cfg } from './common.mjs';

// The provider's base URL ends in /v1, as the OpenAI providers' do.
const anthropic = createAnthropic({ baseURL: cfg.baseURL, apiKey });
await runAISDK(anthropic('claude-e2e'));
