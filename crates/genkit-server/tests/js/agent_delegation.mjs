// Drives a Rust supervisor agent (agents middleware delegating to two
// sub-agents) with Genkit JS's own agent client (`remoteAgent` from
// `genkit/beta/client`) and prints the turn's answer as JSON.
//
// usage: node agent_delegation.mjs <supervisorUrl>
import { remoteAgent } from 'genkit/beta/client';

const [url] = process.argv.slice(2);
if (!url) {
  console.error('usage: node agent_delegation.mjs <supervisorUrl>');
  process.exit(2);
}
const chat = remoteAgent({ url }).chat();
const res = await chat.send('Report on Rust 1.0.');
console.log(JSON.stringify({
  text: res.text,
  finishReason: res.finishReason,
  artifacts: chat.artifacts ?? [],
}));
