// The settings page's entry module. Each tab of the detail pane registers itself on import.

import "./overview.js";
import "./connection.js";
import "./access.js";
import "./security.js";
import "./actions.js";
import "./tools.js";
import "./import.js";
import "./add_menu.js";
import { startConnectorsPage } from "./connectors.js";

startConnectorsPage();

// live status of the hosted sessions (static/live.js): badges and the Connection tab follow it
import { startLiveStatus } from "./live.js";

startLiveStatus();

import { startApprovals } from "./approvals.js";

startApprovals();
