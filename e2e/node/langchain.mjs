// LangChain JS: a tool-calling loop as its documentation shows it. ChatOpenAI
// is bound to a click tool declared with a zod schema; each tool call the
// model makes is invoked, its result sent back, until the model answers
// without calls. The tool's function checks the input it receives.
//
// Streamed, the loop concatenates the chunks of stream(): invoke() with
// streaming: true would also estimate token counts with a tokenizer that
// js-tiktoken downloads from the network, which the suite must not need.
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { apiKey, cfg, checkToolInput, clickDescription, model, prompt, run } from './common.mjs';

await run(async () => {
  let result;
  const click = tool(async (input) => {
    result = checkToolInput(input);
    return `clicked ${input?.selector}`;
  }, { name: 'click', description: clickDescription, schema: z.object({ selector: z.string() }) });

  const llm = new ChatOpenAI({ model, apiKey, configuration: { baseURL: cfg.baseURL } });
  const withTools = llm.bindTools([click]);
  const ask = async (messages) => {
    if (!cfg.stream) return withTools.invoke(messages);
    let reply;
    for await (const chunk of await withTools.stream(messages)) reply = reply ? reply.concat(chunk) : chunk;
    return reply;
  };
  const messages = [new HumanMessage(prompt)];
  for (let turn = 0; turn < 3; turn++) {
    const reply = await ask(messages);
    messages.push(reply);
    if (!reply.tool_calls?.length) {
      if (reply.invalid_tool_calls?.length) {
        const bad = reply.invalid_tool_calls[0];
        return { ok: false, observed: `tool not called; invalid_tool_calls: ${bad.error ?? ''} args ${bad.args}`, detail: 'the call reached the client invalid' };
      }
      break;
    }
    for (const call of reply.tool_calls) messages.push(await click.invoke(call));
  }
  return result ?? { ok: false, observed: 'tool not called', detail: 'the model made no tool call' };
}, (err) => err instanceof Error && err.constructor !== Error && err.constructor !== SyntaxError);
