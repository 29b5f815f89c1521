//! Tools: functions a model may call. Typed tools derive their schemas from
//! Rust types (as closures, or as types implementing [`ToolImpl`]); dynamic
//! tools take raw JSON schema; multipart tools return parts besides their
//! output; interrupts ([`ToolInterrupt`]) pause generation for a human.

use crate::types::{
    MultipartToolResponse, Part, PartKind, ToolDefinition, ToolRequest, ToolResponse,
};
use genkit_core::action::ActionCtx;
use genkit_core::{
    Action, ActionDesc, ActionKind, DynAction, Error, Payload, Registry, Result, StatusCode,
};
use schemars::JsonSchema;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

pub mod definitions;
mod marks;
pub use marks::{NEEDS_APPROVAL_KEY, SIDE_EFFECTS_KEY, has_side_effects, needs_approval};

/// What a tool receives besides its input: the one [`ActionCtx`] (context,
/// cancellation, trace ids, registry, extensions — reached through `Deref`)
/// viewed as a tool call, which adds [`interrupt`](Self::interrupt).
pub struct ToolCtx(ActionCtx);

impl ToolCtx {
    /// The tool view of an action context.
    pub fn new(ctx: ActionCtx) -> Self {
        Self(ctx)
    }

    /// The underlying action context.
    pub fn into_inner(self) -> ActionCtx {
        self.0
    }

    /// An error that interrupts generation at this tool call (human in the
    /// loop): return it as `Err(ctx.interrupt(..))`. The caller gets the tool
    /// request back with `metadata.interrupt` set to `metadata` (or `true`).
    pub fn interrupt(&self, metadata: Option<Value>) -> Error {
        ToolInterrupt::new(metadata).into()
    }
}

impl std::ops::Deref for ToolCtx {
    type Target = ActionCtx;

    fn deref(&self) -> &ActionCtx {
        &self.0
    }
}

impl std::fmt::Debug for ToolCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A tool call pausing generation for a human (or the calling app) to
/// answer: Genkit's `ToolInterruptError`. A tool body returns it as an
/// [`Error`] (`Err(ToolInterrupt::new(meta).into())` or
/// `Err(ctx.interrupt(meta))`); the generate loop recognises it by type and
/// hands the tool request back with `metadata.interrupt` set.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInterrupt {
    metadata: Value,
}

impl ToolInterrupt {
    /// An interrupt with `metadata` (`true` when `None`).
    pub fn new(metadata: Option<Value>) -> Self {
        Self {
            metadata: metadata.unwrap_or(Value::Bool(true)),
        }
    }

    /// The metadata set as the tool request's `metadata.interrupt`.
    pub fn metadata(&self) -> &Value {
        &self.metadata
    }

    /// The interrupt an error carries, if it is one.
    pub fn from_error(error: &Error) -> Option<&ToolInterrupt> {
        error.payload::<ToolInterrupt>()
    }
}

impl From<ToolInterrupt> for Error {
    fn from(interrupt: ToolInterrupt) -> Self {
        Error::new(StatusCode::Aborted, "tool interrupted generation").with_payload(interrupt)
    }
}

/// An error that, returned from a tool, interrupts generation (see [`ToolInterrupt`]).
pub fn interrupt_error(metadata: Option<Value>) -> Error {
    ToolInterrupt::new(metadata).into()
}

/// Whether `error` is a tool interrupt.
pub fn is_interrupt(error: &Error) -> bool {
    ToolInterrupt::from_error(error).is_some()
}

/// The metadata of a tool interrupt (`true` when none was given).
pub fn interrupt_metadata(error: &Error) -> Option<&Value> {
    ToolInterrupt::from_error(error).map(ToolInterrupt::metadata)
}

/// A tool: an action of kind `tool` with typed input `I` and output `O`.
pub struct Tool<I, O> {
    action: DynAction,
    output_schema: Option<genkit_core::schema::SchemaValidator>,
    input_schema: Option<genkit_core::schema::SchemaValidator>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for Tool<I, O> {
    fn clone(&self) -> Self {
        Self {
            action: self.action.clone(),
            output_schema: None,
            input_schema: None,
            _types: PhantomData,
        }
        .with_validators()
    }
}

impl<I, O> std::fmt::Debug for Tool<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("key", &self.action.key())
            .finish()
    }
}

impl<I, O> Tool<I, O> {
    fn with_validators(mut self) -> Self {
        let compile = |s: &Option<Value>| {
            s.as_ref()
                .and_then(|s| genkit_core::schema::SchemaValidator::compile(s).ok())
        };
        self.input_schema = compile(&self.action.desc().input_schema);
        self.output_schema = compile(&self.action.desc().output_schema);
        self
    }

    fn from_dyn(action: DynAction) -> Self {
        Self {
            action,
            output_schema: None,
            input_schema: None,
            _types: PhantomData,
        }
        .with_validators()
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.action.name()
    }

    /// The tool as an erased action.
    pub fn to_dyn(&self) -> DynAction {
        self.action.clone()
    }

    /// The definition sent to models.
    pub fn definition(&self) -> ToolDefinition {
        to_tool_definition(self.action.desc())
    }
}

impl<I: Payload, O: Payload> Tool<I, O> {
    /// A tool whose schemas derive from `I` and `O`, not registered anywhere
    /// (pass it to `generate` by value: a dynamic tool).
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        I: JsonSchema,
        O: JsonSchema,
        F: Fn(I, ToolCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        let mut desc = ActionDesc::new(ActionKind::Tool, name)
            .with_description(description)
            .with_metadata("type", Value::from("tool"));
        desc.input_schema = Some(genkit_core::schema::schema_for::<I>());
        desc.output_schema = Some(genkit_core::schema::schema_for::<O>());
        let action = Action::<I, O>::from_desc(desc, move |i, ctx| f(i, ToolCtx(ctx)))
            .unwrap_or_else(|e| panic!("derived tool schemas compile: {e}"));
        Self::from_dyn(action.to_dyn())
    }

    /// A response part answering an interrupted call of this tool with
    /// `output` (validated against the output schema).
    pub fn respond(&self, interrupt: &Part, output: O) -> Result<Part> {
        let output = serde_json::to_value(output)?;
        if let Some(v) = &self.output_schema {
            v.validate(&output)?;
        }
        respond_tool(interrupt, output, None)
    }

    /// A restart part that re-runs an interrupted call of this tool, with
    /// `resumed` metadata (the tool sees it as
    /// [`ActionCtx::resumed`](genkit_core::action::ActionCtx::resumed)
    /// through its [`ToolCtx`]) and optionally a replaced input.
    pub fn restart(
        &self,
        interrupt: &Part,
        resumed: Option<Value>,
        replace_input: Option<I>,
    ) -> Result<Part> {
        let replace = match replace_input {
            Some(i) => {
                let v = serde_json::to_value(i)?;
                if let Some(s) = &self.input_schema {
                    s.validate(&v)?;
                }
                Some(v)
            }
            None => None,
        };
        restart_tool(interrupt, resumed, replace)
    }
}

impl Tool<Value, Value> {
    /// A dynamic tool from raw JSON schemas (`None` accepts anything).
    pub fn from_json_schema<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Option<Value>,
        output_schema: Option<Value>,
        f: F,
    ) -> Result<Self>
    where
        F: Fn(Value, ToolCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value>> + Send + 'static,
    {
        let mut desc = ActionDesc::new(ActionKind::Tool, name)
            .with_description(description)
            .with_metadata("type", Value::from("tool"));
        desc.input_schema = input_schema;
        desc.output_schema = output_schema;
        let action = Action::<Value, Value>::from_desc(desc, move |i, ctx| f(i, ToolCtx(ctx)))?;
        Ok(Self::from_dyn(action.to_dyn()))
    }
}

/// A tool as a Rust type: associated input and output types (their JSON
/// schemas are what the model sees), a name, a description and a `call`
/// method. Register it with [`define_tool_impl`] (the facade's
/// `ai.define_tool_impl(MyTool)`) or pass [`Tool::from_impl`] to `generate`.
///
/// ```
/// use genkit_model::tool::{ToolCtx, ToolImpl};
///
/// struct Add;
///
/// impl ToolImpl for Add {
///     type Input = (i64, i64);
///     type Output = i64;
///     fn name(&self) -> &str { "add" }
///     fn description(&self) -> String { "Adds two numbers.".into() }
///     async fn call(&self, (a, b): (i64, i64), _ctx: ToolCtx) -> genkit_core::Result<i64> {
///         Ok(a + b)
///     }
/// }
/// ```
pub trait ToolImpl: Send + Sync + 'static {
    /// What the model passes in.
    type Input: Payload + JsonSchema;
    /// What the tool returns to the model.
    type Output: Payload + JsonSchema;

    /// The tool's name (registered as `/tool/<name>`).
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> String;

    /// Runs the tool. Return `Err(ctx.interrupt(..))` to interrupt generation.
    fn call(
        &self,
        input: Self::Input,
        ctx: ToolCtx,
    ) -> impl Future<Output = Result<Self::Output>> + Send;

    /// Whether calls need a human's approval before they run (see
    /// [`Tool::needs_approval`]); no by default.
    fn needs_approval(&self) -> bool {
        false
    }

    /// Whether the tool changes the world, so its results are never cached
    /// (see [`Tool::side_effecting`]); no by default.
    fn side_effecting(&self) -> bool {
        false
    }
}

impl<I: Payload + JsonSchema, O: Payload + JsonSchema> Tool<I, O> {
    /// A tool from a [`ToolImpl`], not registered anywhere.
    pub fn from_impl<T>(tool: T) -> Self
    where
        T: ToolImpl<Input = I, Output = O>,
    {
        let (name, description) = (tool.name().to_owned(), tool.description());
        let (approval, side_effects) = (tool.needs_approval(), tool.side_effecting());
        let tool = Arc::new(tool);
        let mut out = Self::new(name, description, move |input, ctx| {
            let tool = tool.clone();
            async move { tool.call(input, ctx).await }
        });
        if approval {
            out = out.needs_approval();
        }
        if side_effects {
            out = out.side_effecting();
        }
        out
    }
}

/// Defines a tool from a [`ToolImpl`] and registers it as `/tool/<name>`.
pub fn define_tool_impl<T: ToolImpl>(
    registry: &Registry,
    tool: T,
) -> Result<Tool<T::Input, T::Output>> {
    let tool = Tool::from_impl(tool);
    registry.register(tool.to_dyn())?;
    Ok(tool)
}

/// Defines a tool and registers it as `/tool/<name>`.
pub fn define_tool<I, O, F, Fut>(
    registry: &Registry,
    name: &str,
    description: &str,
    f: F,
) -> Result<Tool<I, O>>
where
    I: Payload + JsonSchema,
    O: Payload + JsonSchema,
    F: Fn(I, ToolCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O>> + Send + 'static,
{
    let tool = Tool::new(name, description, f);
    registry.register(tool.to_dyn())?;
    Ok(tool)
}

/// Defines a multipart tool (`/tool.v2/<name>`): it returns parts (`content`)
/// and metadata besides its output.
pub fn define_multipart_tool<I, F, Fut>(
    registry: &Registry,
    name: &str,
    description: &str,
    f: F,
) -> Result<Tool<I, MultipartToolResponse>>
where
    I: Payload + JsonSchema,
    F: Fn(I, ToolCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<MultipartToolResponse>> + Send + 'static,
{
    let mut desc = ActionDesc::new(ActionKind::ToolV2, name)
        .with_description(description)
        .with_metadata("type", Value::from("tool.v2"))
        .with_metadata("tool", json!({"multipart": true}));
    desc.input_schema = Some(genkit_core::schema::schema_for::<I>());
    desc.output_schema = Some(genkit_core::schema::schema_for::<MultipartToolResponse>());
    let action =
        Action::<I, MultipartToolResponse>::from_desc(desc, move |i, ctx| f(i, ToolCtx(ctx)))?;
    registry.register(action.to_dyn())?;
    Ok(Tool::from_dyn(action.to_dyn()))
}

/// Computes an interrupt's metadata from the tool input.
pub type InterruptMetadataFn<I> = std::sync::Arc<dyn Fn(&I) -> Value + Send + Sync>;

/// Defines an interrupt: a tool that always interrupts, for a human (or the
/// calling app) to answer with [`Tool::respond`]. `request_metadata`
/// computes the interrupt's metadata from the input.
pub fn define_interrupt<I, O>(
    registry: &Registry,
    name: &str,
    description: &str,
    request_metadata: Option<InterruptMetadataFn<I>>,
) -> Result<Tool<I, O>>
where
    I: Payload + JsonSchema,
    O: Payload + JsonSchema,
{
    let mut desc = ActionDesc::new(ActionKind::Tool, name)
        .with_description(description)
        .with_metadata("type", Value::from("tool"))
        .with_metadata("tool", json!({"restartable": false}));
    desc.input_schema = Some(genkit_core::schema::schema_for::<I>());
    desc.output_schema = Some(genkit_core::schema::schema_for::<O>());
    let action = Action::<I, O>::from_desc(desc, move |i: I, _ctx| {
        let meta = request_metadata.as_ref().map(|f| f(&i));
        async move { Err::<O, _>(interrupt_error(meta)) }
    })?;
    registry.register(action.to_dyn())?;
    Ok(Tool::from_dyn(action.to_dyn()))
}

fn interrupted_request(interrupt: &Part) -> Result<&ToolRequest> {
    interrupt
        .as_tool_request()
        .ok_or_else(|| Error::invalid_argument("expected an interrupted tool request part"))
}

/// A `toolResponse` part answering the interrupted tool request `interrupt`
/// (Genkit's `respondTool`); its metadata marks it as an interrupt response.
pub fn respond_tool(interrupt: &Part, output: Value, metadata: Option<Value>) -> Result<Part> {
    let req = interrupted_request(interrupt)?;
    let mut part = Part::tool_response(ToolResponse::for_request(req, output));
    part.metadata = Some(Map::from_iter([(
        "interruptResponse".to_owned(),
        metadata.unwrap_or(Value::Bool(true)),
    )]));
    Ok(part)
}

/// A `toolRequest` part that re-runs the interrupted request `interrupt`
/// (Genkit's `restartTool`): same name and ref, metadata `resumed`, and the
/// original input kept as `replacedInput` when `replace_input` is given.
pub fn restart_tool(
    interrupt: &Part,
    resumed: Option<Value>,
    replace_input: Option<Value>,
) -> Result<Part> {
    let req = interrupted_request(interrupt)?;
    let mut new_req = ToolRequest {
        reference: req.reference.clone(),
        name: req.name.clone(),
        input: replace_input.clone().or_else(|| req.input.clone()),
        partial: None,
    };
    new_req.partial = None;
    let mut metadata = interrupt.metadata.clone().unwrap_or_default();
    metadata.insert("resumed".into(), resumed.unwrap_or(Value::Bool(true)));
    if replace_input.is_some()
        && let Some(original) = &req.input
    {
        metadata.insert("replacedInput".into(), original.clone());
    }
    let mut part = Part::new(PartKind::ToolRequest(new_req));
    part.metadata = Some(metadata);
    Ok(part)
}

/// The short name models see: the action name after its last `/`.
pub fn short_tool_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The definition of a tool action sent to models (Genkit's `toToolDefinition`).
pub fn to_tool_definition(desc: &ActionDesc) -> ToolDefinition {
    let empty = || json!({"$schema": "http://json-schema.org/draft-07/schema#"});
    let name = short_tool_name(&desc.name);
    let mut def = ToolDefinition::new(name, desc.description.clone().unwrap_or_default())
        .with_input_schema(desc.input_schema.clone().unwrap_or_else(empty))
        .with_output_schema(desc.output_schema.clone().unwrap_or_else(empty));
    if name != desc.name {
        def.metadata = Some(Map::from_iter([(
            "originalName".to_owned(),
            Value::from(desc.name.clone()),
        )]));
    }
    def
}

/// Anything `generate` accepts as a tool: a registered tool's name, or a
/// tool (action) by value.
#[derive(Clone)]
pub enum ToolArg {
    /// A name looked up in the registry (`getWeather`, `/tool/getWeather`).
    Name(String),
    /// A tool given by value; registered for the call only.
    Action(DynAction),
}

impl From<&str> for ToolArg {
    fn from(s: &str) -> Self {
        ToolArg::Name(s.to_owned())
    }
}

impl From<String> for ToolArg {
    fn from(s: String) -> Self {
        ToolArg::Name(s)
    }
}

impl From<DynAction> for ToolArg {
    fn from(a: DynAction) -> Self {
        ToolArg::Action(a)
    }
}

impl<I, O> From<&Tool<I, O>> for ToolArg {
    fn from(t: &Tool<I, O>) -> Self {
        ToolArg::Action(t.to_dyn())
    }
}

impl<I, O> From<Tool<I, O>> for ToolArg {
    fn from(t: Tool<I, O>) -> Self {
        ToolArg::Action(t.to_dyn())
    }
}
