"""Where the package and the repository around it are on disk."""
import os

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # gemm_lessons/
REPO_DIR = os.path.dirname(PACKAGE_DIR)  # the checkout: lessons/, notebooks/, results/
