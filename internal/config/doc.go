// Package config reads a project's airlock config, `.airlock.toml` at the
// base root, and guarantees that what it returns was read from a regular
// file in the base (never through a symlink, never from a staged tree) and
// is fully valid: every key known, every value of the right type, every
// selector compiled. Anything else is an *Error naming the file, the line
// and the key.
//
// # Schema
//
//	exclude = ["node_modules/", "*.log"]   # added to the default excludes
//	protect = ["secrets/**"]               # added to the default protected selectors
//	default_excludes = true                # false drops .aider*, .claude/settings.local.json, .claude/worktrees/
//	default_protect = true                 # false drops .envrc, .vscode/tasks.json, .github/workflows/, .airlock.toml
//	backend = "auto"                       # auto | copy | reflink | overlay | worktree
//	validate = "go test ./..."             # run at every commit (run, commit, land, undo, review, MCP, hooks); never lowered
//	validate_env = ["GOCACHE"]             # variables of the committer the project's validate gets
//	agents_approve = false                 # true: an agent's own approval of protected changes stands (MCP approve: true, no person asked)
//	gc_keep = "7d"                         # how long a plain gc keeps a settled transaction (undo, receipt): "14d", "36h", "0"
//
//	[hooks]
//	stop = "check"                         # check | commit | off
//
// Every key is optional; an absent file is the zero config with the
// defaults (both default lists kept, backend auto, no validate, agents
// do not approve, gc keeps settled transactions 7 days, stop hook "check"). Selectors use gitignore syntax, as --exclude and --protect do.
//
// # Precedence
//
// The config is the project's default; flags add to it or override it.
// Excludes and protected selectors are concatenated in the order defaults,
// config, flags, so that a flag's "!pattern" can re-include what the config
// selected. A --backend other than auto wins over the config's backend.
// validate is a gate no caller lowers: --validate CMD (and the MCP commit
// tool's validate, the review page's) adds a validator that runs after
// the config's, never instead of it, and an explicitly empty --validate is
// refused rather than taken as "none".
//
// # Hooks
//
// hooks.stop says what an agent's stop hook does with the transaction it
// stops in: "check" runs the fail-closed checks and the validate command
// and blocks the agent with the refusal so it can fix it; "commit"
// commits the transaction on stop; "off" does nothing.
//
// # Trust
//
// The config is read from the base when a transaction opens and its
// effective settings are recorded in the transaction; a `.airlock.toml`
// the agent writes in its staged workspace is only content (and protected
// by default, so committing it needs --approve). It changes the rules
// only for transactions opened after it landed.
package config
