// Peer for bench/server: Genkit JS's Express flow server (@genkit-ai/express
// startFlowServer) serving the same two flows as the Rust bench targets:
//   POST /echo   {"data": "x"} -> {"result": "x"}
//   POST /stream {"data": n}   -> n chunks {"i": k}, then "done"
// Listens on $PORT (default 3402). Production mode: unset GENKIT_ENV.
import { startFlowServer } from '@genkit-ai/express';
import { genkit } from 'genkit';

const ai = genkit({});
const echo = ai.defineFlow('echo', async (s) => s);
const stream = ai.defineFlow('stream', async (n, { sendChunk }) => {
  for (let i = 0; i < n; i++) sendChunk({ i });
  return 'done';
});
startFlowServer({ flows: [echo, stream], port: Number(process.env.PORT ?? 3402) });
