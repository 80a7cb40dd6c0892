import { Injectable } from '@nestjs/common';
import type { Actor } from '../../common/auth/actor.js';
import type { Caller } from '../../common/auth/caller.js';
import { CredentialKind, type CredentialPlugin } from '../credentials/credential-kind.js';

/**
 * An agent run acting on its starter's behalf: no secret and no door (its work is queued and run by a worker), so it
 * never authenticates a bearer; it makes the caller of each tool call the run makes, which the audit log names
 * `agent_run` with the run's id. Its budget is the run's own caps (agent.* config), enforced when it is queued.
 */
@Injectable()
@CredentialKind()
export class AgentRunCredential implements CredentialPlugin {
  readonly name = 'agent-run';
  readonly via = 'agent_run';
  readonly prefixes = [];
  readonly doors = {};
  readonly invalidMessage = 'An agent run is not a credential that can be presented';

  describe(): string {
    return 'an agent run';
  }

  wrongDoor(): string {
    return this.invalidMessage;
  }

  authenticate(): Promise<null> {
    return Promise.resolve(null);
  }

  /** The caller of one tool call of a run: its starter, narrowed to the run's pins and scopes. */
  callerFor(runId: string, actor: Actor, scopes: readonly string[]): Caller {
    return {
      kind: this.name,
      via: this.via,
      credentialId: null,
      userId: actor.userId,
      actor,
      scopes,
      confirmWrites: false,
      expiresAt: null,
      budgetKey: `run:${runId}`,
      runId,
    };
  }
}
