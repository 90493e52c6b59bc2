// High-level vault operations that hide the crypto (CLI, dashboard, pipelines):
// open a vault and get environment keys, create a project with its vault, grant
// members, re-key, and create API keys and CI tokens with their key grants.
export * from './errors.js';
export * from './keys.js';
export * from './session.js';
export * from './project.js';
export * from './rekey.js';
export * from './tokens.js';
export * from './credential.js';
export * from './key-pins.js';
export * from './introduction.js';
export * from './chain.js';
export * from './membership.js';
