//! `Genkit::define_format`: a custom output format reaches `generate`.

use genkit::formats::{
    ChunkParseContext, Format, FormatConfig, FormatError, FormatHandler, OutputFormat,
};
use genkit::prelude::*;
use genkit::testing::ProgrammableModel;
use serde_json::{Value, json};

/// `upper`: the text, upper-cased, as a JSON string.
struct Upper;

struct UpperHandler;

impl Format for Upper {
    fn name(&self) -> &str {
        "upper"
    }

    fn config(&self) -> FormatConfig {
        FormatConfig::default()
    }

    fn handler(&self, _schema: Option<&Value>) -> Result<Box<dyn FormatHandler>, FormatError> {
        Ok(Box::new(UpperHandler))
    }
}

impl FormatHandler for UpperHandler {
    fn instructions(&self) -> Option<String> {
        None
    }

    fn parse_message(&self, message: &Message) -> Result<Value, FormatError> {
        Ok(Value::from(message.text().to_uppercase()))
    }

    fn parse_chunk(&self, context: &ChunkParseContext<'_>) -> Result<Option<Value>, FormatError> {
        Ok(Some(Value::from(context.accumulated_text().to_uppercase())))
    }
}

#[tokio::test]
async fn a_defined_format_parses_generate_output() {
    let ai = Genkit::builder().no_prompt_dir().build().unwrap();
    assert_eq!(ai.define_format(Upper).name(), "upper");
    ProgrammableModel::define(ai.registry(), "m").respond_text("shout");
    let response = ai
        .generate(
            GenerateOptions::prompt("x")
                .model("m")
                .output_format(OutputFormat::custom("upper")),
        )
        .await
        .unwrap();
    assert_eq!(
        response.output_value_in(ai.registry()).unwrap(),
        json!("SHOUT")
    );
}
