//! `config.json` and `auth.json` under `$ZUT_HOME`.
