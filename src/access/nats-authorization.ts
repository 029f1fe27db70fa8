/**
 * The nats-server `authorization` block that gives every component its user
 * (`nats-permissions.ts`). The same text configures the server in deploy/nats,
 * the local stack and the denial tests, so what is tested is what is shipped.
 *
 * Passwords never appear in it: each is a reference to an environment variable
 * of the server (`password: $SWITCHYARD_NATS_PASSWORD_ASSIGN`), set from the
 * credentials Secret, or, for the local stack, a literal generated at start.
 */
import type { Config } from '../config/schema.ts';
import { NATS_IDENTITIES, type NatsIdentity, natsPermissions } from './nats-permissions.ts';

/** The server's environment variable holding `identity`'s password. */
export function passwordVariable(identity: NatsIdentity): string {
  return `SWITCHYARD_NATS_PASSWORD_${identity.toUpperCase().replaceAll('-', '_')}`;
}

/** How the block names a password: a variable of the server's environment, or the password itself. */
export type PasswordSource = { variable: string } | { literal: string };

export interface ExtraUser {
  user: string;
  password: string;
}

function passwordExpression(source: PasswordSource): string {
  return 'variable' in source ? `$${source.variable}` : JSON.stringify(source.literal);
}

function userEntry(
  identity: NatsIdentity,
  config: Config,
  password: PasswordSource,
  permissions: NatsPermissionsMode,
): string {
  const { publish, subscribe } = natsPermissions(identity, config);
  return [
    '    {',
    `      user: ${JSON.stringify(identity)}`,
    `      password: ${passwordExpression(password)}`,
    ...(permissions === 'scoped'
      ? [
          '      permissions: {',
          `        publish: { allow: ${JSON.stringify(publish)} }`,
          `        subscribe: { allow: ${JSON.stringify(subscribe)} }`,
          '      }',
        ]
      : []),
    '    }',
  ].join('\n');
}

/**
 * `scoped`: each component's user may use only its own subjects, as deploy/ configures them.
 * `open`: the same users with every permission, which no cluster should run: what the
 * per-subject checks cost nats-server is the difference (bench/scale-rebalance.ts).
 */
export type NatsPermissionsMode = 'scoped' | 'open';

/**
 * The block. `password` says where each component's password comes from (by
 * default the server's environment); `admin` adds one user with every
 * permission that connections without credentials act as: the local stack's
 * tests and tools, never a cluster's server.
 */
export function renderAuthorization(opts: {
  config: Config;
  password?: (identity: NatsIdentity) => PasswordSource;
  admin?: ExtraUser;
  permissions?: NatsPermissionsMode;
}): string {
  const password = opts.password ?? ((identity) => ({ variable: passwordVariable(identity) }));
  const users = NATS_IDENTITIES.map((identity) =>
    userEntry(identity, opts.config, password(identity), opts.permissions ?? 'scoped'),
  );
  if (opts.admin) {
    users.push(
      `    { user: ${JSON.stringify(opts.admin.user)}, password: ${JSON.stringify(opts.admin.password)} }`,
    );
  }
  return [
    '# Generated from src/access/nats-permissions.ts: one user per Switchyard component.',
    'authorization {',
    '  users: [',
    users.join('\n'),
    '  ]',
    '}',
    ...(opts.admin ? [`no_auth_user: ${JSON.stringify(opts.admin.user)}`] : []),
    '',
  ].join('\n');
}
