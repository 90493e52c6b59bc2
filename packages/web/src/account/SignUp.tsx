import { Link, Navigate, useNavigate } from 'react-router';
import { SignUpForm } from '../app/SignUpForm';
import { auth, useAuth } from '../lib/auth';
import { useTitle } from '../lib/title';

export function SignUpPage() {
  useTitle('Create account');
  const state = useAuth();
  const navigate = useNavigate();
  if (state.status === 'signed-in') return <Navigate to="/projects" replace />;
  return (
    <div className="center-page">
      <SignUpForm
        onDone={(user) => {
          auth.enter(user);
          navigate('/projects', { replace: true });
        }}
      />
      <p className="small">
        Already have an account? <Link to="/signin">Sign in</Link>
      </p>
    </div>
  );
}
