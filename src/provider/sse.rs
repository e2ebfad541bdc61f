//! Server-sent events parsing shared by the HTTP providers.
