// Runs KDL's ChainExternalWrenchEstimator on recorded samples (bench/kdl_observer.py builds
// and drives it: PyKDL does not expose the estimator).
//
//   kdl_observer RATE_HZ GAIN < input > output
//
// input (whitespace-separated numbers): the chain, then the samples
//   nseg, then per segment: name type(0 fixed, 1 revolute)
//       origin xyz (3), R (9, row-major; parent -> joint frame), axis (3, joint frame),
//       mass, com (3, segment frame), inertia about the com (ixx iyy izz ixy ixz iyz, segment axes)
//   N, then per sample: q (nj), qdot (nj), tau (nj)
// output: per sample: the estimated joint torques (nj) and the end-effector wrench (6:
//   force, torque; end-effector frame), one line each.  Sample 0 primes the estimator
//   (its previous inertia matrix for the finite-difference Hdot) and sets the initial
//   momentum; it prints zeros.
#include <kdl/chain.hpp>
#include <kdl/chainexternalwrenchestimator.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

using namespace KDL;

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: kdl_observer RATE_HZ GAIN < input\n";
        return 2;
    }
    const double rate = std::atof(argv[1]), gain = std::atof(argv[2]);
    int nseg = 0;
    std::cin >> nseg;
    Chain chain;
    for (int s = 0; s < nseg; ++s) {
        std::string name;
        int type;
        double o[3], R[9], a[3], m, c[3], I[6];
        std::cin >> name >> type;
        for (double& x : o) std::cin >> x;
        for (double& x : R) std::cin >> x;
        for (double& x : a) std::cin >> x;
        std::cin >> m;
        for (double& x : c) std::cin >> x;
        for (double& x : I) std::cin >> x;
        Frame F(Rotation(R[0], R[1], R[2], R[3], R[4], R[5], R[6], R[7], R[8]), Vector(o[0], o[1], o[2]));
        Joint j = type == 1 ? Joint(name + "_joint", F.p, F.M * Vector(a[0], a[1], a[2]), Joint::RotAxis)
                            : Joint(name + "_joint", Joint::Fixed);
        RigidBodyInertia inertia(m, Vector(c[0], c[1], c[2]), RotationalInertia(I[0], I[1], I[2], I[3], I[4], I[5]));
        chain.addSegment(Segment(name, j, F, inertia));
    }
    if (!std::cin) {
        std::cerr << "kdl_observer: bad chain input\n";
        return 2;
    }
    const unsigned nj = chain.getNrOfJoints();
    int N = 0;
    std::cin >> N;
    ChainExternalWrenchEstimator est(chain, Vector(0.0, 0.0, -9.81), rate, gain, 0.0);
    JntArray q(nj), qd(nj), tau(nj), r(nj);
    Wrench w;
    for (int k = 0; k < N; ++k) {
        for (unsigned i = 0; i < nj; ++i) std::cin >> q(i);
        for (unsigned i = 0; i < nj; ++i) std::cin >> qd(i);
        for (unsigned i = 0; i < nj; ++i) std::cin >> tau(i);
        if (!std::cin) {
            std::cerr << "kdl_observer: bad sample " << k << "\n";
            return 2;
        }
        int rc = est.JntToExtWrench(q, qd, tau, w);
        if (rc < 0) {
            std::cerr << "kdl_observer: JntToExtWrench failed at sample " << k << ": " << est.strError(rc) << "\n";
            return 1;
        }
        if (k == 0) {
            est.setInitialMomentum(q, qd);
            SetToZero(r);
            SetToZero(w);
        } else {
            est.getEstimatedJntTorque(r);
        }
        for (unsigned i = 0; i < nj; ++i) std::printf("%.17g ", r(i));
        for (int i = 0; i < 6; ++i) std::printf("%.17g ", w(i));
        std::printf("\n");
    }
    return 0;
}
