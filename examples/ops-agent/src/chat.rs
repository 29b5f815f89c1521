//! The interactive terminal chat: line editing and history (rustyline),
//! streamed answers, approvals asked inline, Ctrl-C to cancel a running turn
//! (or clear the line), Ctrl-D to leave.

use std::io::Write;
use std::path::Path;

use genkit::agent::Agent;
use genkit::prelude::*;
use genkit::types::ToolRequest;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tokio::runtime::Runtime;

use crate::turn::{self, Decision, Outcome, TurnUi, describe};

const PROMPT: &str = "you> ";

/// The terminal side of a turn: prints as the answer streams, asks for
/// approvals on the same line editor.
struct Terminal<'a> {
    editor: &'a mut DefaultEditor,
    /// Whether the cursor is at the start of a line.
    at_line_start: bool,
    /// Whether the answer's label was printed for this step.
    labelled: bool,
}

impl Terminal<'_> {
    fn print(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        // A closed stdout has no one to tell; the turn still completes.
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
        }
    }

    fn end_line(&mut self) {
        if !self.at_line_start {
            self.print("\n");
        }
    }
}

impl TurnUi for Terminal<'_> {
    fn text(&mut self, text: &str) {
        if !self.labelled {
            self.end_line();
            self.print("agent> ");
            self.labelled = true;
        }
        self.print(text);
    }

    fn tool_call(&mut self, request: &ToolRequest) {
        self.end_line();
        self.print(&format!("  [tool] {}\n", describe(request)));
        self.labelled = false;
    }

    fn approve(&mut self, request: &ToolRequest, why: &str) -> Decision {
        self.end_line();
        self.print(&format!("  [approval] {why}\n    {}\n", describe(request)));
        self.labelled = false;
        loop {
            match self.editor.readline("  approve? [y/n] ") {
                Ok(answer) => match answer.trim().to_lowercase().as_str() {
                    "y" | "yes" => return Decision::Approve,
                    "n" | "no" => return Decision::Deny(None),
                    _ => self.print("  please answer y or n\n"),
                },
                // Ctrl-C, Ctrl-D or a broken terminal: the safe answer.
                Err(_) => return Decision::Deny(Some("the user did not answer".into())),
            }
        }
    }
}

/// Ends a turn's output: a cancelled turn and an error are said so.
fn report(terminal: &mut Terminal<'_>, outcome: Result<Outcome>) {
    terminal.end_line();
    match outcome {
        Ok(Outcome::Answered(_)) => {}
        Ok(Outcome::Cancelled) => {
            terminal.print("(cancelled; nothing was stored for this turn)\n");
        }
        Err(e) => terminal.print(&format!("error: {e}\n")),
    }
}

/// Runs the chat on `session` (`None`: a new one, whose id the server
/// mints with its first turn; it is shown then) until Ctrl-D; line history
/// in `history`; `resume_args` are the options besides `--session` that
/// continue the session (its store).
pub fn run(
    rt: &Runtime,
    agent: &Agent,
    session: &mut Option<String>,
    history: &Path,
    resume_args: &str,
) -> Result<()> {
    let mut editor = DefaultEditor::new()
        .map_err(|e| Error::internal(format!("cannot open the terminal: {e}")).with_source(e))?;
    // No history yet is fine: it is written when the chat ends.
    let _ = editor.load_history(history);
    {
        // A restart the last run left waiting for approval is asked first.
        let mut terminal = Terminal {
            editor: &mut editor,
            at_line_start: true,
            labelled: false,
        };
        match turn::settle_pending(rt, agent, session, &mut terminal, true) {
            Ok(None) => {}
            Ok(Some(outcome)) => report(&mut terminal, Ok(outcome)),
            Err(e) => report(&mut terminal, Err(e)),
        }
    }
    loop {
        let line = match editor.readline(PROMPT) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue, // Ctrl-C at the prompt clears the line
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Error::internal(format!("reading the terminal: {e}"))),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line);
        if matches!(line, "/quit" | "/exit") {
            break;
        }
        let mut terminal = Terminal {
            editor: &mut editor,
            at_line_start: true,
            labelled: false,
        };
        let new = session.is_none();
        let outcome = turn::run(rt, agent, session, line, &mut terminal, true);
        report(&mut terminal, outcome);
        if new && let Some(id) = session.as_deref() {
            terminal.print(&format!("session: {id} (new)\n"));
        }
    }
    if let Err(e) = editor.save_history(history) {
        eprintln!(
            "could not save the line history to {}: {e}",
            history.display()
        );
    }
    match session {
        Some(id) => println!("bye. Resume with: ops-agent --session {id}{resume_args}"),
        None => println!("bye. (nothing was stored: no session to resume)"),
    }
    Ok(())
}
