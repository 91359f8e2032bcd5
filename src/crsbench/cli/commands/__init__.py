"""The `crsbench` commands, one module each: every module's `register(app)` adds its command (or its
group of subcommands) to the app, and cli.main puts them together in the order `crsbench --help` lists."""
