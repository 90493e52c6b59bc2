import type React from 'react';
import { createBrowserRouter, Navigate, type RouteObject } from 'react-router';
import { AppShell, RequireSession } from './app/Shell';
import { SignInPage } from './account/SignIn';
import { ProjectsPage } from './projects/Projects';
import { ADMINS, ANYONE, ProjectLayout, WRITERS, type ProjectTab } from './app/ProjectLayout';
import { SecretsPage } from './secrets/SecretsPage';

// The administration pages, the environments, the sign-up and the invitations
// (opened once per project joined) load when first opened: the first visit
// (sign-in, grid) carries only what everyone needs.
const page = <M,>(load: () => Promise<M>, pick: (module: M) => React.ComponentType) => ({
  lazy: async () => ({ Component: pick(await load()) }),
});
import { NotFoundPage } from './app/NotFound';

/**
 * The project's tabs, in the order of its tab strip: a tab is one entry here
 * (its path under /projects/:id, its label, who sees it, its page).
 */
const PROJECT_TABS: (ProjectTab & { route: Omit<RouteObject, 'index' | 'path' | 'children'> })[] = [
  { path: '', label: 'Secrets', roles: ANYONE, route: { element: <SecretsPage /> } },
  {
    path: 'environments',
    label: 'Environments',
    roles: ANYONE,
    route: page(
      () => import('./environments/Environments'),
      (m) => m.EnvironmentsPage,
    ),
  },
  {
    path: 'members',
    label: 'Members',
    roles: ANYONE,
    route: page(
      () => import('./members/Members'),
      (m) => m.MembersPage,
    ),
  },
  {
    path: 'access',
    label: 'Access',
    roles: ADMINS,
    route: page(
      () => import('./access/Access'),
      (m) => m.AccessPage,
    ),
  },
  {
    path: 'tokens',
    label: 'Tokens',
    roles: WRITERS,
    route: page(
      () => import('./tokens/Tokens'),
      (m) => m.TokensPage,
    ),
  },
  {
    path: 'webhooks',
    label: 'Webhooks',
    roles: ADMINS,
    route: page(
      () => import('./webhooks/WebhooksPage'),
      (m) => m.WebhooksPage,
    ),
  },
  {
    path: 'audit',
    label: 'Audit',
    roles: ADMINS,
    route: page(
      () => import('./audit/Audit'),
      (m) => m.AuditPage,
    ),
  },
  {
    path: 'settings',
    label: 'Settings',
    roles: ADMINS,
    route: page(
      () => import('./projects/ProjectSettings'),
      (m) => m.ProjectSettingsPage,
    ),
  },
];

export const router = createBrowserRouter([
  { path: '/signin', element: <SignInPage /> },
  {
    path: '/signup',
    ...page(
      () => import('./account/SignUp'),
      (m) => m.SignUpPage,
    ),
  },
  {
    path: '/invite',
    ...page(
      () => import('./invitations/Invite'),
      (m) => m.InvitePage,
    ),
  },
  {
    path: '/recover',
    ...page(
      () => import('./account/Recover'),
      (m) => m.RecoverPage,
    ),
  },
  {
    element: <RequireSession />,
    children: [
      {
        element: <AppShell />,
        children: [
          { index: true, element: <Navigate to="/projects" replace /> },
          { path: '/projects', element: <ProjectsPage /> },
          {
            path: '/invitations',
            ...page(
              () => import('./invitations/Invitations'),
              (m) => m.InvitationsPage,
            ),
          },
          {
            path: '/account',
            ...page(
              () => import('./account/Account'),
              (m) => m.AccountPage,
            ),
          },
          { path: '/settings', element: <Navigate to="/account" replace /> },
          {
            path: '/projects/:projectId',
            element: <ProjectLayout tabs={PROJECT_TABS} />,
            children: [
              ...PROJECT_TABS.map(({ path, route }) =>
                path === '' ? { index: true, ...route } : { path, ...route },
              ),
            ],
          },
          { path: '*', element: <NotFoundPage /> },
        ],
      },
    ],
  },
]);
