//! `zut ext …` subcommands.
