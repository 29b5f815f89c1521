// Records Genkit JS's @genkit-ai/middleware 0.7 filesystem and skills
// middleware on scripted conversations: a scripted model issues tool calls,
// and what comes back (tool definitions, tool responses, injected messages)
// is written to ../../crates/genkit-middleware/tests/fixtures/middleware_js.json.
// Run: node record.js [output] (after npm ci; test.sh records to a temp
// file and checks it matches the committed fixture). Paths in the output are relative to a
// fresh temp directory, so the fixture is stable.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { genkit, z } = require('genkit');
const mw = require('@genkit-ai/middleware');

function tmpTree() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mwjs-'));
  fs.mkdirSync(path.join(root, 'src/nested'), { recursive: true });
  fs.writeFileSync(path.join(root, 'hello.txt'), 'Hello, world!\n');
  fs.writeFileSync(path.join(root, 'src/main.rs'), 'fn main() {\n    println!("hi");\n}\n');
  fs.writeFileSync(path.join(root, 'src/nested/deep.md'), '# Deep\n');
  return root;
}

function skillsTree() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mwjs-skills-'));
  const s = path.join(root, 'skills');
  fs.mkdirSync(path.join(s, 'pirate'), { recursive: true });
  fs.writeFileSync(path.join(s, 'pirate/SKILL.md'), '---\nname: pirate\ndescription: Talk like a pirate.\n---\nSay arr a lot.\n');
  fs.mkdirSync(path.join(s, 'plain'), { recursive: true });
  fs.writeFileSync(path.join(s, 'plain/SKILL.md'), 'No frontmatter here.\n');
  fs.mkdirSync(path.join(s, '.hidden'), { recursive: true });
  fs.writeFileSync(path.join(s, '.hidden/SKILL.md'), '---\ndescription: hidden\n---\n');
  fs.mkdirSync(path.join(s, 'empty'), { recursive: true });
  return { root, dir: s };
}

// One scenario: the model asks for `calls` in its first turn, then answers
// "done"; we record what the second model request holds.
async function run(use, calls, system) {
  const ai = genkit({});
  const requests = [];
  let turn = 0;
  ai.defineModel({ name: 'scripted', supports: { tools: true, multiturn: true, systemRole: true } }, async (req) => {
    requests.push(JSON.parse(JSON.stringify(req)));
    if (turn++ === 0 && calls.length) {
      return {
        message: {
          role: 'model',
          content: calls.map((c, i) => ({ toolRequest: { name: c.name, ref: String(i), input: c.input } })),
        },
        finishReason: 'stop',
      };
    }
    return { message: { role: 'model', content: [{ text: 'done' }] }, finishReason: 'stop' };
  });
  const opts = { model: 'scripted', prompt: 'go', use };
  if (system) opts.system = system;
  let error;
  try {
    await ai.generate(opts);
  } catch (e) {
    error = e.message;
  }
  const first = requests[0];
  const last = requests[requests.length - 1];
  return {
    tools: (first?.tools ?? []).map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema, outputSchema: t.outputSchema })),
    firstMessages: first?.messages,
    afterMessages: requests.length > 1 ? last.messages.slice(first.messages.length + 1) : [],
    error,
  };
}

function scrub(value, root) {
  return JSON.parse(JSON.stringify(value).split(root).join('<ROOT>'));
}

(async () => {
  const out = { configSchemas: {}, filesystem: {}, skills: {} };
  // What the Reflection API lists for each (MiddlewareDesc).
  for (const name of ['filesystem', 'skills', 'retry', 'fallback']) {
    out.configSchemas[name] = mw[name].toJson();
  }

  const scenarios = {
    list_root: [{ name: 'list_files', input: {} }],
    list_root_explicit: [{ name: 'list_files', input: { dirPath: '' } }],
    list_recursive: [{ name: 'list_files', input: { dirPath: 'src', recursive: true } }],
    list_escape: [{ name: 'list_files', input: { dirPath: '..' } }],
    list_absolute: [{ name: 'list_files', input: { dirPath: '/etc' } }],
    read_text: [{ name: 'read_file', input: { filePath: 'hello.txt' } }],
    read_two: [{ name: 'read_file', input: { filePath: 'hello.txt' } }, { name: 'read_file', input: { filePath: 'src/nested/deep.md' } }],
    read_missing: [{ name: 'read_file', input: { filePath: 'nope.txt' } }],
    read_escape: [{ name: 'read_file', input: { filePath: '../../etc/passwd' } }],
    read_dotdot_inside: [{ name: 'read_file', input: { filePath: 'src/../hello.txt' } }],
    write_new: [{ name: 'write_file', input: { filePath: 'out/new.txt', content: 'fresh' } }, { name: 'read_file', input: { filePath: 'out/new.txt' } }],
    write_escape: [{ name: 'write_file', input: { filePath: '../evil.txt', content: 'x' } }],
    replace_ok: [{ name: 'search_and_replace', input: { filePath: 'src/main.rs', edits: ['<<<<<<< SEARCH\n    println!("hi");\n=======\n    println!("bye");\n>>>>>>> REPLACE'] } }, { name: 'read_file', input: { filePath: 'src/main.rs' } }],
    replace_bad_format: [{ name: 'search_and_replace', input: { filePath: 'hello.txt', edits: ['nope'] } }],
    replace_no_separator: [{ name: 'search_and_replace', input: { filePath: 'hello.txt', edits: ['<<<<<<< SEARCH\nHello\n>>>>>>> REPLACE'] } }],
    replace_not_found: [{ name: 'search_and_replace', input: { filePath: 'hello.txt', edits: ['<<<<<<< SEARCH\nGoodbye\n=======\nHi\n>>>>>>> REPLACE'] } }],
    replace_missing_file: [{ name: 'search_and_replace', input: { filePath: 'missing.txt', edits: ['<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE'] } }],
  };
  for (const [name, calls] of Object.entries(scenarios)) {
    const root = tmpTree();
    const r = await run([mw.filesystem({ rootDirectory: root, allowWriteAccess: true })], calls);
    out.filesystem[name] = { calls, ...scrub(r, root) };
  }
  {
    const root = tmpTree();
    const r = await run([mw.filesystem({ rootDirectory: root })], [{ name: 'write_file', input: { filePath: 'a.txt', content: 'x' } }]);
    out.filesystem.read_only_write = { calls: [{ name: 'write_file', input: { filePath: 'a.txt', content: 'x' } }], ...scrub(r, root) };
    const p = await run([mw.filesystem({ rootDirectory: root, toolNamePrefix: 'fs_' })], [{ name: 'fs_list_files', input: {} }]);
    out.filesystem.prefixed = { calls: [{ name: 'fs_list_files', input: {} }], ...scrub(p, root) };
  }

  const { root: sroot, dir } = skillsTree();
  const skillScenarios = {
    use_pirate: [{ name: 'use_skill', input: { skillName: 'pirate' } }],
    use_plain: [{ name: 'use_skill', input: { skillName: 'plain' } }],
    use_missing: [{ name: 'use_skill', input: { skillName: 'ghost' } }],
    use_hidden: [{ name: 'use_skill', input: { skillName: '.hidden' } }],
  };
  for (const [name, calls] of Object.entries(skillScenarios)) {
    const r = await run([mw.skills({ skillPaths: [dir] })], calls);
    out.skills[name] = { calls, ...scrub(r, sroot) };
  }
  out.skills.with_system = { calls: [], ...scrub(await run([mw.skills({ skillPaths: [dir] })], [], 'Be brief.'), sroot) };
  out.skills.no_skills = { calls: [], ...scrub(await run([mw.skills({ skillPaths: [path.join(sroot, 'none')] })], []), sroot) };

  const dest = process.argv[2] ?? path.join(__dirname, '../../crates/genkit-middleware/tests/fixtures/middleware_js.json');
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.writeFileSync(dest, JSON.stringify(out, null, 2) + '\n');
  console.log('wrote', dest);
})();
