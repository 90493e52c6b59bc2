import { createBrowserRouter, Navigate } from 'react-router';
import { AppShell, RequireSession } from './pages/Shell';
import { SignInPage } from './pages/SignIn';
import { SignUpPage } from './pages/SignUp';
import { InvitePage } from './pages/Invite';
import { InvitationsPage } from './pages/Invitations';
import { ProjectsPage } from './pages/Projects';
import { ProjectLayout } from './pages/ProjectLayout';
import { EnvironmentsPage } from './pages/Environments';
import { SecretsPage } from './secrets/SecretsPage';
import { AccountPage } from './pages/Account';
import { RecoverPage } from './pages/Recover';
import { MembersPage } from './pages/Members';
import { AccessPage } from './pages/Access';
import { TokensPage } from './pages/Tokens';
import { AuditPage } from './pages/Audit';
import { ProjectSettingsPage } from './pages/ProjectSettings';
import { NotFoundPage } from './pages/NotFound';

export const router = createBrowserRouter([
  { path: '/signin', element: <SignInPage /> },
  { path: '/signup', element: <SignUpPage /> },
  { path: '/invite', element: <InvitePage /> },
  { path: '/recover', element: <RecoverPage /> },
  {
    element: <RequireSession />,
    children: [
      {
        element: <AppShell />,
        children: [
          { index: true, element: <Navigate to="/projects" replace /> },
          { path: '/projects', element: <ProjectsPage /> },
          { path: '/invitations', element: <InvitationsPage /> },
          { path: '/account', element: <AccountPage /> },
          { path: '/settings', element: <Navigate to="/account" replace /> },
          {
            path: '/projects/:projectId',
            element: <ProjectLayout />,
            children: [
              { index: true, element: <SecretsPage /> },
              { path: 'environments', element: <EnvironmentsPage /> },
              { path: 'members', element: <MembersPage /> },
              { path: 'access', element: <AccessPage /> },
              { path: 'tokens', element: <TokensPage /> },
              { path: 'audit', element: <AuditPage /> },
              { path: 'settings', element: <ProjectSettingsPage /> },
            ],
          },
          { path: '*', element: <NotFoundPage /> },
        ],
      },
    ],
  },
]);
