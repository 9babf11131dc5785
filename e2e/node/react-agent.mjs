// A ReAct agent in the spirit of the classic "LangChain in 100 lines" loop:
// a prompt that lists the tools and the Thought / Action / Action Input /
// Observation / Final Answer format, a search and a calculator tool, and a
// loop that runs the tool the model asks for and sends back what it
// observed, until the model gives its final answer. It declares the tools
// as function tools and, as a tool-calling agent does, runs the tool calls
// the model makes; a reply with neither a call nor a final answer ends the
// loop, the model's text taken for its answer.
import OpenAI from 'openai';
import { apiKey, cfg, model } from './common.mjs';

const tools = {
  // search knows one fact.
  search: ({ query }) => (/population of paris/i.test(query) ? 'Paris has 2148000 inhabitants.' : 'No result.'),
  // calculator evaluates a product of two numbers.
  calculator: ({ expression }) => {
    const m = /^\s*(\d+(?:\.\d+)?)\s*\*\s*(\d+(?:\.\d+)?)\s*$/.exec(expression);
    return m ? String(Number(m[1]) * Number(m[2])) : `cannot evaluate ${expression}`;
  },
};
const declared = [
  { type: 'function', function: { name: 'search', description: 'Search the web.', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } } },
  { type: 'function', function: { name: 'calculator', description: 'Evaluate a product.', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } } },
];
const system = `Answer the question as best you can. You have these tools:
search: search the web.
calculator: evaluate a product such as 3 * 4.
Use this format:
Thought: what to do next
Action: the tool to use, one of search, calculator
Action Input: the input of the tool
Observation: the result of the tool
... (Thought/Action/Action Input/Observation may repeat)
Thought: I now know the final answer
Final Answer: the answer`;

const client = new OpenAI({ baseURL: cfg.baseURL, apiKey });
const messages = [{ role: 'system', content: system }, { role: 'user', content: 'What is twice the population of Paris?' }];
const ran = [];
let result;
try {
  for (let turn = 0; turn < 6 && !result; turn++) {
    const params = { model, messages, tools: declared };
    const completion = cfg.stream
      ? await client.chat.completions.stream(params).finalChatCompletion()
      : await client.chat.completions.create(params);
    const msg = completion.choices[0].message;
    messages.push(msg);
    if (msg.tool_calls?.length) {
      for (const call of msg.tool_calls) {
        const run = tools[call.function.name];
        if (!run) throw new Error(`the model asked for ${call.function.name}, which is not a tool`);
        const observation = run(JSON.parse(call.function.arguments));
        ran.push(`${call.function.name}(${call.function.arguments})`);
        messages.push({ role: 'tool', tool_call_id: call.id, content: observation });
      }
      continue;
    }
    const final = /Final Answer:\s*(.*)/.exec(msg.content ?? '');
    const answer = final ? final[1].trim() : (msg.content ?? '').trim();
    const observed = `answer ${JSON.stringify(answer.slice(0, 80))} after ${ran.length} tool run(s)${ran.length ? ': ' + ran.join(', ') : ''}`;
    result = final && answer === '4296000' && ran.length === 2
      ? { ok: true, observed }
      : { ok: false, observed, detail: final ? 'wrong final answer' : 'the loop ended on text that was no final answer: the call came as text' };
  }
  result ??= { ok: false, observed: `no final answer after ${ran.length} tool run(s)`, detail: 'the loop did not end' };
} catch (err) {
  result = { ok: false, observed: `${err.constructor.name}: ${err.message}`, detail: 'the agent failed' };
}
console.log(JSON.stringify(result));
process.exitCode = result.ok ? 0 : 1;
