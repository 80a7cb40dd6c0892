export type AgentRunStatus = 'queued' | 'running' | 'awaiting_approval' | 'succeeded' | 'failed' | 'cancelled';
export const AGENT_RUN_STATUSES: readonly AgentRunStatus[] = [
  'queued',
  'running',
  'awaiting_approval',
  'succeeded',
  'failed',
  'cancelled',
];

/**
 * When a run stops before a write tool call (readOnlyHint false) until someone with the authority of the write decides:
 * `auto` (the default) once the run has read text its starter did not write (`untrustedSince`), `writes` always,
 * `none` never (explicit only: text the run reads can then steer every write it makes).
 */
export type AgentRunApproval = 'auto' | 'writes' | 'none';
export const AGENT_RUN_APPROVALS: readonly AgentRunApproval[] = ['auto', 'writes', 'none'];
export const DEFAULT_AGENT_RUN_APPROVAL: AgentRunApproval = 'auto';

/** The credential that decided (as the audit log names credentials). */
export interface StepDecider {
  userId: string;
  via: 'user_token' | 'project_token';
  /** The project session token's id; null for a user access token. */
  credentialId: string | null;
}

/** Who decided about a write call, and when (shown in the step log). */
export interface StepDecision {
  decision: 'approve' | 'reject';
  decidedBy: StepDecider;
  decidedAt: string;
  /** The model's arguments, kept when the approver edited them. */
  originalArguments?: unknown;
  /** The approver's rights (kept, never shown): an approved call runs within both the run's and these. */
  approverActor?: AgentRunActor;
}

/** A tool result that carried text the run's starter did not write: which object (`document:<id>`, `github:owner/name`). */
export interface UntrustedRead {
  target: string;
}

/** The first read of such text: from then on an `auto` run asks before every write. */
export interface UntrustedSince {
  stepIndex: number;
  tool: string;
  target: string;
}
export const FINAL_STATUSES: readonly AgentRunStatus[] = ['succeeded', 'failed', 'cancelled'];

/** A tool call the model asked for, as the Chat Completions wire format carries it. */
export interface ModelToolCall {
  id: string;
  name: string;
  /** The raw JSON text the model produced (may be invalid JSON). */
  arguments: string;
}

/**
 * One step as stored in `agent_runs.steps`. Public fields are shown by status; `callId`, `toolCalls` and
 * `modelContent` are kept so a resumed run can rebuild the conversation without redoing anything.
 */
export interface StoredStep {
  index: number;
  type: 'tool_call' | 'message';
  /**
   * tool_call: started (recorded before executing), ok, error, unknown (worker died mid-call; never retried);
   * with approval: awaiting_approval (stopped before a write), approved (decided, not yet run), rejected.
   */
  status: 'started' | 'ok' | 'error' | 'unknown' | 'awaiting_approval' | 'approved' | 'rejected';
  tool?: string;
  arguments?: unknown;
  resultSummary?: string;
  /** message: the model's text (may be empty when it only asks for tools). */
  content?: string | null;
  startedAt: string;
  finishedAt: string | null;
  callId?: string;
  toolCalls?: ModelToolCall[];
  modelContent?: string;
  approval?: StepDecision;
  /** Set when the result carried text the starter did not write. */
  untrusted?: UntrustedRead;
}

/** Who a run acts as: the caller pinned to the run's project (see AgentRunsService.start). */
export interface AgentRunActor {
  userId: string;
  projectIds: readonly string[] | null;
  repos: readonly string[] | null;
  projectRoleCap?: 'editor' | 'viewer';
}

/** An agent run as the repository returns it (AgentRunsRepository; the claim and webhook columns stay inside). */
export interface AgentRun {
  id: string;
  userId: string;
  projectId: string;
  status: AgentRunStatus;
  input: string;
  output: string | null;
  error: string | null;
  steps: StoredStep[];
  provider: string;
  model: string;
  tools: string[] | null;
  scopes: string[];
  actor: AgentRunActor;
  maxSteps: number;
  approval: AgentRunApproval;
  pausedMs: number;
  webhookUrl: string | null;
  cancelRequested: boolean;
  attempts: number;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface AgentStepView {
  index: number;
  type: 'tool_call' | 'message';
  status: StoredStep['status'];
  tool?: string;
  arguments?: unknown;
  resultSummary?: string;
  content?: string | null;
  approval?: Omit<StepDecision, 'approverActor'>;
  untrusted?: UntrustedRead;
  startedAt: string;
  finishedAt: string | null;
}

export interface AgentRunView {
  jobId: string;
  projectId: string;
  status: AgentRunStatus;
  provider: string;
  model: string;
  tools: string[] | null;
  maxSteps: number;
  approval: AgentRunApproval;
  /** The first step that read text the starter did not write (null while the run has read only its own). */
  untrustedSince: UntrustedSince | null;
  input: string;
  output: string | null;
  steps: AgentStepView[];
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export type AgentRunSummary = Omit<AgentRunView, 'steps'> & { stepCount: number };

function iso(value: Date | null): string | null {
  return value ? new Date(value).toISOString() : null;
}

export function toStepView(step: StoredStep): AgentStepView {
  const view: AgentStepView = {
    index: step.index,
    type: step.type,
    status: step.status,
    startedAt: step.startedAt,
    finishedAt: step.finishedAt,
  };
  if (step.type === 'tool_call') {
    view.tool = step.tool;
    view.arguments = step.arguments;
    if (step.resultSummary !== undefined) view.resultSummary = step.resultSummary;
    if (step.approval) {
      const { approverActor: _kept, ...shown } = step.approval;
      view.approval = shown;
    }
    if (step.untrusted) view.untrusted = step.untrusted;
  } else {
    view.content = step.content ?? null;
    if (step.resultSummary !== undefined) view.resultSummary = step.resultSummary;
  }
  return view;
}

/** The first step whose result carried text the starter did not write, or null. */
export function untrustedSince(steps: readonly StoredStep[]): UntrustedSince | null {
  const step = steps.find((candidate) => candidate.untrusted !== undefined);
  return step ? { stepIndex: step.index, tool: step.tool ?? 'unknown', target: step.untrusted!.target } : null;
}

export function toSummary(run: AgentRun): AgentRunSummary {
  return {
    jobId: run.id,
    projectId: run.projectId,
    status: run.status,
    provider: run.provider,
    model: run.model,
    tools: run.tools,
    maxSteps: run.maxSteps,
    approval: run.approval,
    untrustedSince: untrustedSince(run.steps),
    input: run.input,
    output: run.output,
    error: run.error,
    stepCount: run.steps.length,
    createdAt: iso(run.createdAt)!,
    startedAt: iso(run.startedAt),
    finishedAt: iso(run.finishedAt),
  };
}

export function toView(run: AgentRun): AgentRunView {
  const { stepCount: _stepCount, ...summary } = toSummary(run);
  return { ...summary, steps: run.steps.map(toStepView) };
}
