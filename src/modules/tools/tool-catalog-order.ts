/**
 * The catalog order of API.md. Listings (Area A and MCP tools/list) follow it; tools not named here
 * come after, by name, so a new provider still needs no edit outside its own module.
 */
export const TOOL_CATALOG_ORDER: readonly string[] = [
  'list_tasks',
  'get_task',
  'search_tasks',
  'task_stats',
  'create_task',
  'update_task',
  'delete_task',
  'list_documents',
  'get_document',
  'search_documents',
  'create_document',
  'update_document',
  'delete_document',
  'list_repositories',
  'list_commits',
  'list_issues',
  'list_pull_requests',
  'list_workflow_runs',
  'create_issue',
  'create_issue_comment',
];

export function compareToolNames(a: string, b: string): number {
  const ia = TOOL_CATALOG_ORDER.indexOf(a);
  const ib = TOOL_CATALOG_ORDER.indexOf(b);
  if (ia !== -1 && ib !== -1) return ia - ib;
  if (ia !== -1) return -1;
  if (ib !== -1) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}
