//! The catalogue of doctor's findings: stable IDs (scripts and reports
//! refer to them), one line each, and the long form `ecp explain ID`
//! prints, in the same shape as lint's rules and check's checks.

use std::fmt;

macro_rules! codes {
    ($($variant:ident = $id:literal, $summary:literal, $explain:literal;)*) => {
        /// One kind of finding of `ecp doctor`. The ID is stable.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Code { $($variant,)* }

        impl Code {
            /// Every code, in the catalogue's order.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable ID.
            pub fn id(self) -> &'static str {
                match self { $(Code::$variant => $id,)* }
            }

            /// One line: what doctor found.
            pub fn summary(self) -> &'static str {
                match self { $(Code::$variant => $summary,)* }
            }

            /// The long form: what Qwen Code then does, and the fix.
            pub fn explanation(self) -> &'static str {
                match self { $(Code::$variant => $explain,)* }
            }
        }
    };
}

codes! {
    NotInstalled = "not-installed",
        "no extension of that name is installed",
        "`ecp doctor NAME` looked in Qwen Code's extensions folder of this user and found no extension installed as NAME. Install it (`ecp try`, or `qwen extensions install`) or name one that is.";
    ManifestUnreadable = "manifest-unreadable",
        "an installed extension's manifest is not JSON",
        "Qwen Code skips an extension whose qwen-extension.json it cannot parse: none of its servers runs. Reinstall it from a release that passes `ecp lint`.";
    NoServer = "no-server",
        "the manifest declares no MCP server",
        "An External Context extension declares exactly one server offering context_search; without one, Qwen has nothing to start.";
    DisabledHere = "disabled-here",
        "the extension is disabled in this workspace",
        "Qwen Code's extension enablement disables it for this folder (or all folders): none of its servers starts here. Enable it with `qwen extensions enable NAME`.";
    ExtensionsOff = "extensions-off",
        "the execution sandbox loads no extension's server",
        "With tools.executionSandbox set, Qwen Code 0.24.4 starts no MCP server of any extension. Define the server in the system settings instead (`ecp managed`).";
    RepositoryDefinition = "repository-definition",
        "the definition Qwen uses comes from the repository",
        "A server of the same name in the workspace's settings or `.mcp.json` replaces the extension's definition: whoever controls the repository chooses the command, once someone approves it (`qwen mcp approve`). Remove that definition, or deploy the server with `ecp managed`, whose system settings win.";
    VersionTag = "version-tag",
        "a release install's tag and the manifest's version disagree",
        "Qwen decides updates of a GitHub install by comparing the release tag with `releases/latest`: a tag that does not name the manifest's version makes updates wrong forever. Install the release whose tag names the manifest's version.";
    QuietMode = "quiet-mode",
        "safe or bare mode is on in Qwen's environment",
        "QWEN_CODE_SAFE_MODE makes Qwen load no extension and take MCP servers only from --mcp-config; QWEN_CODE_SIMPLE (bare mode) makes it read no settings and no .env file. Either keeps the server from running as the profile intends. Unset it.";
    ServerDisabled = "server-disabled",
        "the server is switched off in the settings",
        "The settings' disabled servers list names it: Qwen does not start it. Enable it with `qwen mcp enable NAME` (or remove it from the list).";
    WorkspaceUntrusted = "workspace-untrusted",
        "the workspace is not trusted",
        "Qwen starts no MCP server in an untrusted workspace, while `qwen mcp list` still shows the server connected. Trust the folder (`/trust` in Qwen, or the trusted folders file).";
    ServerNotAllowed = "server-not-allowed",
        "mcp.allowed does not list the server",
        "When the settings set mcp.allowed, Qwen drops every server it does not list. Add the server's name to mcp.allowed.";
    ServerExcluded = "server-excluded",
        "mcp.excluded names the server",
        "Qwen skips every server mcp.excluded names (an administrator's `ecp managed --auto-recall` writes one on purpose). Remove the entry, unless the hook is meant to replace the tool.";
    ToolDenied = "tool-denied",
        "a deny rule hides the tool",
        "A permissions.deny or tools.exclude rule matches mcp__NAME__context_search: the model never sees the tool. Remove the rule.";
    Shadowed = "shadowed",
        "another definition of the server wins",
        "A server of the same name defined elsewhere (a settings layer, `.mcp.json`, an extension earlier in Qwen's load order) replaces the extension's definition whole: Qwen runs that one. Rename one of them, or remove the other definition.";
    ToolExcluded = "tool-excluded",
        "excludeTools names the tool",
        "excludeTools wins over includeTools: the model never sees context_search. Remove it from excludeTools.";
    ToolsExposed = "tools-exposed",
        "the server exposes more than the one tool",
        "The profile exposes context_search only: without `\"includeTools\": [\"context_search\"]` in the definition Qwen uses, any other tool the server lists reaches the model.";
    Trust = "server-trusted",
        "the definition sets `trust: true`",
        "`trust: true` makes Qwen call the server's tools without asking, in a trusted folder. The profile never needs it: remove it.";
    Timeout = "timeout",
        "the call timeout is missing or inside the provider budget",
        "Without `timeout` Qwen waits up to 10 minutes for a call; with one at or below the adapter's 5000 ms provider budget, Qwen gives up before the adapter's own timeout error. Set \"timeout\": 8000, the profile's.";
    VariableUnset = "variable-unset",
        "a variable the server needs is set nowhere Qwen looks",
        "Qwen fills `${NAME}` from its environment, its .env files and the settings' env; unset, the server gets the literal text. Qwen 0.24.4 does not pass extension settings to the server. Export it in the environment Qwen starts with.";
    VariableFromRepository = "variable-from-repository",
        "a variable the server needs comes from the repository",
        "A value from the workspace's .env or settings is the repository's choice: whoever controls it chooses the endpoint or the credential the server uses. Set it in the user's environment or settings instead, where the repository cannot.";
    EntryPoint = "entry-point",
        "the entry point cannot run here",
        "The installed dist/main is missing, not executable, or built for another platform: Qwen's server fails to start. Reinstall the release archive built for this machine.";
    TokensPlainText = "tokens-plain-text",
        "OAuth tokens are kept in plain text",
        "Unless QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE is `true`, Qwen keeps a remote server's OAuth tokens in a plain JSON file. Set it, and sign in again.";
    TokenFileMode = "token-file-mode",
        "the token file can be read by other users",
        "The file holding OAuth tokens is readable by group or others. `chmod 600` it.";
    TokensStoredPlain = "tokens-stored-plain",
        "a plain token file holds this server's tokens",
        "Tokens written before encrypted storage was forced stay in the plain file. Remove them (log out, or delete the file) and sign in again.";
    EncryptedTokenFileMissing = "encrypted-token-file-missing",
        "encrypted token storage is forced and its file is missing",
        "Qwen Code 0.24.4 with QWEN_CODE_FORCE_ENCRYPTED_FILE_STORAGE=true and no token file fails to start every MCP server, stdio ones too (\"Token file does not exist\"). Sign in to one OAuth server once, or unset the variable.";
    SettingsInvalid = "settings-invalid",
        "a settings file Qwen reads is invalid",
        "Qwen stops at start on a settings file it cannot parse, or on a folder-trust rule it refuses. Fix the file it names.";
    CannotJudge = "cannot-judge",
        "a file Qwen reads could not be read",
        "Doctor could not read a file Qwen Code would read (too large, not a regular file, unreadable): what Qwen takes from it is unknown, so no answer of this run is proven. Make the file readable, and run doctor again.";
    HookCommand = "hook-command",
        "an ecp runtime's hook does not start with `--hook`",
        "The runtime reads `--hook` only as its first argument; otherwise it reads the arguments as --listen flags and exits 2, which blocks every prompt. Register `dist/main --hook user-prompt-submit ...` (`ecp managed --auto-recall` writes it).";
    HooksDisabled = "hooks-disabled",
        "hooks are disabled, so Auto Recall never searches",
        "`disableAllHooks: true` in the settings, or safe or bare mode, keeps Qwen from running any hook. Set disableAllHooks to false in the system settings (`ecp managed --auto-recall` writes it), and start Qwen without safe or bare mode.";
    SpeculationOn = "speculation-on",
        "speculation is on beside an Auto Recall hook",
        "With ui.enableSpeculation Qwen runs suggested prompts before they are submitted; the Auto Recall deployment keeps it off, so that the provider is searched for what the user submits. Set ui.enableSpeculation to false in the system settings (`ecp managed --auto-recall` writes it).";
    HookRepositoryRoot = "hook-root",
        "the hook's repository root is missing or wrong",
        "The hook searches only for prompts whose folder is inside its --repository-root; a root that is missing, relative or not a folder makes it add nothing. Name the repository's absolute folder.";
    HookEntryMissing = "hook-entry-missing",
        "the hook runs a program that is not there",
        "Every prompt's hook fails when the command it runs does not exist. Install the extension where the hook names it, or fix the path.";
    HookEntryWritable = "hook-entry-writable",
        "what the hook runs or reads can be written by others",
        "A hook runs with every prompt: whoever can write its program, or the instance file it reads, runs code or picks the endpoint each prompt goes to. Make them root-owned and not group- or world-writable.";
    HookConfigMissing = "hook-config-missing",
        "the hook's instance file is not named",
        "Qwen's mem0 hook reads its instance file from QWEN_EXTERNAL_CONTEXT_MEM0_CONFIG; unset or not an absolute file, the hook adds nothing to any prompt. Export it (an absolute path to a schemaVersion 3 instance file) in the environment Qwen starts with.";
    DuplicateRetrieval = "duplicate-retrieval",
        "the hook and the MCP server of one provider are both active",
        "Each prompt is then searched twice: by the hook before the prompt, and by the tool when the model calls it. Keep one (`ecp managed --auto-recall` excludes the server).";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl Code {
    /// Looks a code up by ID.
    pub fn from_id(id: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|code| code.id() == id)
    }
}
