// The roles are an access rule and live with the access module; re-exported here for the projects module's DTOs.
export { PROJECT_ROLES, cappedRole, roleAtLeast, type ProjectRole } from '../../common/access/project-roles.js';
