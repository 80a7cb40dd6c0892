import { sql, type RawBuilder } from 'kysely';
import type { Actor } from '../auth/actor.js';
import { actorSqlValues, type ActorPlaceholders } from './access-rules.js';

const USER = '\u0000actor-user\u0000';
const PINS = '\u0000actor-pins\u0000';

/**
 * One of the string predicates of access-rules.ts (`visibleDocumentSql`, `viewerStatScopesSql`, …) as a Kysely
 * `sql` fragment with the actor's user id and pins bound as parameters: the rule stays written once, and a
 * repository composes it into its statement like any other fragment (no `sql.raw`, no hand-numbered
 * placeholders). The predicate text comes from code only; the actor's values never enter the SQL text.
 *
 * Interim bridge while access-rules.ts speaks strings: when the access module offers Kysely predicates, the
 * callers of this function swap to them one for one.
 */
export function actorPredicate(predicate: (actor: ActorPlaceholders) => string, actor: Pick<Actor, 'userId' | 'projectIds'>): RawBuilder<boolean> {
  const text = predicate({ user: USER, pins: PINS });
  const [userId, pins] = actorSqlValues(actor as Actor);
  // Split the predicate at its placeholders: the pieces are the template's strings, the values its arguments,
  // exactly what the `sql` tag receives from a literal template.
  const pieces = text.split(/(\u0000actor-(?:user|pins)\u0000)/);
  const strings: string[] = [];
  const values: unknown[] = [];
  for (let i = 0; i < pieces.length; i += 1) {
    if (i % 2 === 0) strings.push(pieces[i]);
    else values.push(pieces[i] === USER ? userId : pins);
  }
  const template = Object.assign([...strings], { raw: [...strings] }) as unknown as TemplateStringsArray;
  return sql<boolean>(template, ...values);
}
