// What the recording scripts share: the scripted model and the `add` tool.
import { z } from 'genkit/beta';

export const DEFAULT_SUPPORTS = {
  multiturn: true,
  media: true,
  tools: true,
  systemRole: true,
  toolChoice: true,
};

// Defines `programmableModel` on `ai`: it records each request it gets into
// `requests` and answers with `responses` in order (streaming
// `streamChunks[i]` on turn i; an `{error}` response throws its message).
export function defineScriptedModel(ai, { responses, requests, supports, streamChunks }) {
  const queue = [...responses];
  let turn = 0;
  ai.defineModel(
    { name: 'programmableModel', apiVersion: 'v2', supports: supports ?? DEFAULT_SUPPORTS },
    async (req, { sendChunk }) => {
      requests.push(JSON.parse(JSON.stringify(req)));
      for (const chunk of streamChunks?.[turn] ?? []) sendChunk(chunk);
      turn++;
      const response = queue.shift();
      if (!response) throw new Error('no scripted response left');
      if (response.error) throw new Error(response.error);
      return response;
    },
  );
}

// Defines the tool `add(a, b)`, which returns a + b.
export function defineAddTool(ai) {
  return ai.defineTool(
    {
      name: 'add',
      description: 'adds two numbers',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      outputSchema: z.number(),
    },
    async ({ a, b }) => a + b,
  );
}
