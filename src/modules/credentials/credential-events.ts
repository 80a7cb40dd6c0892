import { Injectable } from '@nestjs/common';

/** A sign-in that was refused (wrong email or password): changes nothing, but the account's owner sees it. */
export interface SignInRefused {
  /** The account the email names, or null when it names none. */
  userId: string | null;
  /** The credential kind that would have been issued (its `via`). */
  via: string;
  email: string;
  ip: string;
}

type Listener = (event: SignInRefused) => void;

/**
 * What happens to credentials that others record, told without knowing who listens: the credential modules sit
 * below the audit log, which subscribes (so auth never imports audit).
 */
@Injectable()
export class CredentialEvents {
  private readonly listeners: Listener[] = [];

  onSignInRefused(listener: Listener): void {
    this.listeners.push(listener);
  }

  signInRefused(event: SignInRefused): void {
    for (const listener of this.listeners) listener(event);
  }
}
