package engine_test

import ()
