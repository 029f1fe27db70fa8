/** The prefix of every inbox of a user's connections: the only subjects it may subscribe to. */
export function inboxPrefixOf(user: string): string {
  return `_INBOX.${user}`;
}
