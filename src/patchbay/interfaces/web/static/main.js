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

import { startApprovals } from "./approvals.js";

startApprovals();
