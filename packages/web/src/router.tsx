import type React from 'react';
import { createBrowserRouter, Navigate } from 'react-router';
import { AppShell, RequireSession } from './pages/Shell';
import { SignInPage } from './pages/SignIn';
import { SignUpPage } from './pages/SignUp';
import { ProjectsPage } from './pages/Projects';
import { ProjectLayout } from './pages/ProjectLayout';
import { EnvironmentsPage } from './pages/Environments';
import { SecretsPage } from './secrets/SecretsPage';

// The administration pages, and the invitations (opened once per project
// joined), load when first opened: the first visit (sign-in, grid) carries only
// what everyone needs.
const page = <M,>(load: () => Promise<M>, pick: (module: M) => React.ComponentType) => ({
  lazy: async () => ({ Component: pick(await load()) }),
});
import { NotFoundPage } from './pages/NotFound';

export const router = createBrowserRouter([
  { path: '/signin', element: <SignInPage /> },
  { path: '/signup', element: <SignUpPage /> },
  {
    path: '/invite',
    ...page(
      () => import('./pages/Invite'),
      (m) => m.InvitePage,
    ),
  },
  {
    path: '/recover',
    ...page(
      () => import('./pages/Recover'),
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
              () => import('./pages/Invitations'),
              (m) => m.InvitationsPage,
            ),
          },
          {
            path: '/account',
            ...page(
              () => import('./pages/Account'),
              (m) => m.AccountPage,
            ),
          },
          { path: '/settings', element: <Navigate to="/account" replace /> },
          {
            path: '/projects/:projectId',
            element: <ProjectLayout />,
            children: [
              { index: true, element: <SecretsPage /> },
              { path: 'environments', element: <EnvironmentsPage /> },
              {
                path: 'members',
                ...page(
                  () => import('./pages/Members'),
                  (m) => m.MembersPage,
                ),
              },
              {
                path: 'access',
                ...page(
                  () => import('./pages/Access'),
                  (m) => m.AccessPage,
                ),
              },
              {
                path: 'tokens',
                ...page(
                  () => import('./pages/Tokens'),
                  (m) => m.TokensPage,
                ),
              },
              {
                path: 'webhooks',
                ...page(
                  () => import('./webhooks/WebhooksPage'),
                  (m) => m.WebhooksPage,
                ),
              },
              {
                path: 'audit',
                ...page(
                  () => import('./pages/Audit'),
                  (m) => m.AuditPage,
                ),
              },
              {
                path: 'settings',
                ...page(
                  () => import('./pages/ProjectSettings'),
                  (m) => m.ProjectSettingsPage,
                ),
              },
            ],
          },
          { path: '*', element: <NotFoundPage /> },
        ],
      },
    ],
  },
]);
